#include "workloads/kernel_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace gpusim::workloads {

const std::vector<hw::Launch>& OpLoweringCache::lower(const models::Op& op) {
  const std::string key = models::describe(op);
  auto cached = lowered_.find(key);
  if (cached == lowered_.end()) cached = lowered_.emplace(key, models_.lower(op, hw_, "#")).first;
  return cached->second;
}

std::vector<hw::Launch> OpLoweringCache::lower_elementwise(const models::ElementwiseProblem& p) {
  // Placeholders no program tensor is named: a control character, then the operand.
  static constexpr char kMark = '\x1f';
  const ElementwiseKey key{p.func, p.n, p.in, p.out, p.strided, p.mask_bytes, p.inputs.size()};
  auto cached = elementwise_.find(key);
  if (cached == elementwise_.end()) {
    models::ElementwiseProblem shape = p;
    for (std::size_t i = 0; i < shape.inputs.size(); ++i) shape.inputs[i] = std::string(1, kMark) + std::to_string(i);
    shape.output = std::string(1, kMark) + "out";
    cached = elementwise_.emplace(key, models::lower_elementwise(shape, hw_, "")).first;
  }
  std::vector<hw::Launch> launches = cached->second;
  for (auto& l : launches) {
    for (auto* uses : {&l.reads, &l.writes}) {
      for (auto& u : *uses) {
        if (u.tensor.empty() || u.tensor[0] != kMark) continue;
        u.tensor = u.tensor == std::string(1, kMark) + "out" ? p.output : p.inputs[std::stoul(u.tensor.substr(1))];
      }
    }
  }
  return launches;
}

hw::TensorUse ProgramBuilder::state(const std::string& name, double bytes) {
  return hw::TensorUse{name, static_cast<std::int64_t>(bytes)};
}

hw::TensorUse ProgramBuilder::activation(const std::string& name, double bytes) {
  const std::string unique = name + "#" + std::to_string(next_id_++);
  activations_[unique].bytes = bytes;
  return hw::TensorUse{unique, static_cast<std::int64_t>(bytes)};
}

void ProgramBuilder::emit(const std::string& label, std::vector<hw::Launch> launches,
                          std::optional<KernelSemantics> semantics) {
  std::vector<KernelDag::Vertex> previous;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    auto& launch = launches[i];
    std::vector<KernelDag::Vertex> deps = previous;
    for (const auto& r : launch.reads) {
      if (const auto it = producer_.find(r.tensor); it != producer_.end()) deps.push_back(it->second);
    }
    const bool last = i + 1 == launches.size();
    const KernelDag::Vertex v =
        dag_.add(std::move(launch), label, deps, last ? std::move(semantics) : std::nullopt);
    const auto at = static_cast<std::int64_t>(v);
    const hw::Launch& added = dag_[v].launch;  // the launch now lives in the DAG
    for (const auto& r : added.reads) {
      if (const auto it = activations_.find(r.tensor); it != activations_.end()) {
        it->second.last = std::max(it->second.last, at);
      }
    }
    for (const auto& w : added.writes) {
      producer_[w.tensor] = v;
      if (const auto it = activations_.find(w.tensor); it != activations_.end() && it->second.first < 0) {
        it->second.first = at;
      }
    }
    previous = {v};
  }
}

void ProgramBuilder::emit_op(const std::string& label, const models::Op& op,
                             const std::map<std::string, hw::TensorUse>& names,
                             std::optional<KernelSemantics> semantics) {
  const std::string tag = new_tag();
  std::vector<hw::Launch> launches = lowering_.lower(op);
  // The model's tensors were lowered as "#.<local>": a named local becomes the program's
  // tensor, the others "<tag>.<local>" (as emit_renamed would make them).
  for (auto& l : launches) {
    for (auto* uses : {&l.reads, &l.writes}) {
      for (auto& u : *uses) {
        if (u.tensor.rfind("#.", 0) != 0) continue;
        const std::string_view local = std::string_view(u.tensor).substr(2);
        const auto named = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == local; });
        u.tensor = named != names.end() ? named->second.tensor : tag + "." + std::string(local);
      }
    }
  }
  emit(label, std::move(launches), std::move(semantics));
}

void ProgramBuilder::emit_renamed(const std::string& label, const std::string& tag,
                                  std::vector<hw::Launch> launches,
                                  const std::map<std::string, hw::TensorUse>& names,
                                  std::optional<KernelSemantics> semantics) {
  const auto rename = [&](std::vector<hw::TensorUse>& uses) {
    for (auto& u : uses) {
      if (u.tensor.rfind(tag + ".", 0) != 0) continue;
      if (const auto it = names.find(u.tensor.substr(tag.size() + 1)); it != names.end()) {
        u.tensor = it->second.tensor;
      }
    }
  };
  for (auto& l : launches) {
    rename(l.reads);
    rename(l.writes);
  }
  emit(label, std::move(launches), std::move(semantics));
}

double ProgramBuilder::activation_peak_bytes() const {
  // Sweep over vertices: a tensor is alive from its first writer to its last reader; one
  // never read (the logits) stays alive to the end of the step.
  const auto end = static_cast<std::int64_t>(dag_.size());
  std::vector<double> delta(static_cast<std::size_t>(end) + 1, 0.0);
  for (const auto& [name, t] : activations_) {
    if (t.first < 0) continue;
    const std::int64_t last = t.last < t.first ? end - 1 : t.last;
    delta[static_cast<std::size_t>(t.first)] += t.bytes;
    delta[static_cast<std::size_t>(last) + 1] -= t.bytes;
  }
  double live = 0, peak = 0;
  for (const double d : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace gpusim::workloads
