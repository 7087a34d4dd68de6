// Lowering reused within a run: launches per op and per elementwise shape, lowered once.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"
#include "models/families.h"
#include "models/kernel_model.h"
#include "models/op.h"

namespace gpusim::workloads {

// Launches per op (by models::describe), lowered once under the tag "#": the 32 layers of a
// model repeat the same ops, and so do the steps of a generate run; GEMM tile choice is the
// costly part of lowering. Lowering is a pure function of the op and the chip, so one cache
// serves every step on one chip.
class OpLoweringCache {
 public:
  OpLoweringCache(const hw::HardwareSpec& hw, const models::KernelModelRegistry& models)
      : hw_(hw), models_(models) {}
  // The cache keeps references: a temporary chip or registry would dangle.
  OpLoweringCache(hw::HardwareSpec&&, const models::KernelModelRegistry&) = delete;
  OpLoweringCache(const hw::HardwareSpec&, models::KernelModelRegistry&&) = delete;
  const hw::HardwareSpec& hw() const { return hw_; }
  const std::vector<hw::Launch>& lower(const models::Op& op);
  // models::lower_elementwise(p, hw, ""), lowered once per shape (its tensors stand in as
  // placeholders) and given p's tensor names on each use.
  std::vector<hw::Launch> lower_elementwise(const models::ElementwiseProblem& p);

 private:
  const hw::HardwareSpec& hw_;
  const models::KernelModelRegistry& models_;
  std::unordered_map<std::string, std::vector<hw::Launch>> lowered_;
  // Every field of the problem but its tensor names (input_types: a promoting op lowers to
  // another kernel than the same op on inputs of one type).
  using ElementwiseKey = std::tuple<models::EwFunc, std::int64_t, hw::DType, hw::DType, bool, std::int64_t,
                                    std::size_t, std::vector<hw::DType>, bool>;
  std::map<ElementwiseKey, std::vector<hw::Launch>> elementwise_;
};

}  // namespace gpusim::workloads
