#include "workloads/op_lowering_cache.h"

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
  const ElementwiseKey key{p.func, p.n, p.in, p.out, p.strided, p.mask_bytes, p.inputs.size(), p.input_types,
                           p.bool_out};
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

}  // namespace gpusim::workloads
