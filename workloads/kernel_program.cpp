#include "workloads/kernel_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace gpusim::workloads {

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
  std::vector<KernelDag::Vertex> previous = std::move(pending_waits_);
  pending_waits_.clear();
  for (std::size_t i = 0; i < launches.size(); ++i) {
    auto& launch = launches[i];
    std::vector<KernelDag::Vertex> deps = previous;
    for (const auto& r : launch.reads) {
      if (const auto it = producer_.find(r.tensor); it != producer_.end()) deps.push_back(it->second);
    }
    const bool last = i + 1 == launches.size();
    const KernelDag::Vertex v =
        dag_.add(std::move(launch), label, deps, last ? std::move(semantics) : std::nullopt);
    if (stream_ != 0) dag_.set_stream(v, stream_);
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

void ProgramBuilder::wait_for(const std::vector<hw::TensorUse>& tensors) {
  for (const auto& t : tensors) {
    if (const auto it = producer_.find(t.tensor); it != producer_.end()) pending_waits_.push_back(it->second);
  }
}

void ProgramBuilder::emit_op(const std::string& label, const models::Op& op,
                             const std::map<std::string, hw::TensorUse>& names,
                             std::optional<KernelSemantics> semantics) {
  const std::string tag = "k" + std::to_string(next_id_++);
  std::vector<hw::Launch> launches = lowering_.lower(op);
  // The model's tensors were lowered as "#.<local>": a named local becomes the program's
  // tensor, the others "<tag>.<local>".
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

std::vector<double> ProgramBuilder::activation_profile() const {
  // Sweep over vertices: a tensor is alive from its first writer to its last reader; one
  // never read (the logits) stays alive to the end of the step.
  const auto end = static_cast<std::int64_t>(dag_.size());
  std::vector<double> live(static_cast<std::size_t>(end) + 1, 0.0);
  for (const auto& [name, t] : activations_) {
    if (t.first < 0) continue;
    const std::int64_t last = t.last < t.first || t.held ? end - 1 : t.last;
    live[static_cast<std::size_t>(t.first)] += t.bytes;
    live[static_cast<std::size_t>(last) + 1] -= t.bytes;
  }
  double sum = 0;
  for (double& d : live) d = sum += d;
  live.pop_back();
  return live;
}

double ProgramBuilder::activation_peak_bytes() const {
  double peak = 0;
  for (const double live : activation_profile()) peak = std::max(peak, live);
  return peak;
}

}  // namespace gpusim::workloads
