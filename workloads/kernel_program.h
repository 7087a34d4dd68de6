// Builds the kernel DAG of one transformer step from framework-level pieces, the way eager
// PyTorch runs them: each piece is lowered to launches by the kernel cost models, and each
// launch waits for the kernels that produced the tensors it reads. It also tracks activation
// lifetimes, so the step's activation peak comes from the same program the engine runs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"
#include "models/families.h"
#include "models/kernel_model.h"
#include "models/op.h"
#include "workloads/kernel_dag.h"

namespace gpusim::workloads {

// Launches per op (by models::describe), lowered once under the tag "#": the 32 layers of a
// model repeat the same ops, and so do the steps of a generate run; GEMM tile choice is the
// costly part of lowering. Lowering is a pure function of the op and the chip, so one cache
// serves every step on one chip.
class OpLoweringCache {
 public:
  OpLoweringCache(const hw::HardwareSpec& hw, const models::KernelModelRegistry& models)
      : hw_(hw), models_(models) {}
  const hw::HardwareSpec& hw() const { return hw_; }
  const std::vector<hw::Launch>& lower(const models::Op& op);
  // models::lower_elementwise(p, hw, ""), lowered once per shape (its tensors stand in as
  // placeholders) and given p's tensor names on each use.
  std::vector<hw::Launch> lower_elementwise(const models::ElementwiseProblem& p);

 private:
  const hw::HardwareSpec& hw_;
  const models::KernelModelRegistry& models_;
  std::unordered_map<std::string, std::vector<hw::Launch>> lowered_;
  using ElementwiseKey = std::tuple<models::EwFunc, std::int64_t, hw::DType, hw::DType, bool, std::int64_t, std::size_t>;
  std::map<ElementwiseKey, std::vector<hw::Launch>> elementwise_;
};

class ProgramBuilder {
 public:
  // With a cache of its own...
  ProgramBuilder(const hw::HardwareSpec& hw, const models::KernelModelRegistry& models)
      : own_cache_(std::make_unique<OpLoweringCache>(hw, models)), lowering_(*own_cache_) {}
  // ...or one shared with other steps on the same chip.
  explicit ProgramBuilder(OpLoweringCache& lowering) : lowering_(lowering) {}

  const hw::HardwareSpec& hw() const { return lowering_.hw(); }
  OpLoweringCache& lowering() { return lowering_; }


  // A tensor that outlives the step (a weight, the KV cache): never counted as an activation.
  hw::TensorUse state(const std::string& name, double bytes);
  // A new activation of this step; the name is made unique ("x" -> "x#12").
  hw::TensorUse activation(const std::string& name, double bytes);

  // Appends `launches` as framework op `label`. A launch waits for the producers of what it
  // reads and for the op's previous launch. `semantics` (what the op computes) goes on the last.
  void emit(const std::string& label, std::vector<hw::Launch> launches,
            std::optional<KernelSemantics> semantics = std::nullopt);

  // Lowers `op` with the cost models, renaming the model's tensors ("<tag>.<local>") to the
  // program's tensors per `names` (local name -> tensor); unnamed locals stay private to the op.
  void emit_op(const std::string& label, const models::Op& op,
               const std::map<std::string, hw::TensorUse>& names,
               std::optional<KernelSemantics> semantics = std::nullopt);
  // The same for launches a model lowered under `tag` (from new_tag()).
  void emit_renamed(const std::string& label, const std::string& tag, std::vector<hw::Launch> launches,
                    const std::map<std::string, hw::TensorUse>& names,
                    std::optional<KernelSemantics> semantics = std::nullopt);
  std::string new_tag() { return "k" + std::to_string(next_id_++); }

  const KernelDag& dag() const { return dag_; }
  KernelDag take_dag() { return std::move(dag_); }
  // The largest total size of activations alive at once (produced and still to be read).
  double activation_peak_bytes() const;

 private:
  struct Lifetime {
    double bytes = 0;
    std::int64_t first = -1, last = -1;  // vertices that write it first and read it last
  };
  std::unique_ptr<OpLoweringCache> own_cache_;
  OpLoweringCache& lowering_;
  KernelDag dag_;
  std::unordered_map<std::string, KernelDag::Vertex> producer_;
  // Sizes are whole bytes (exact in a double), so the peak does not depend on visiting order.
  std::unordered_map<std::string, Lifetime> activations_;
  std::int64_t next_id_ = 0;
};

}  // namespace gpusim::workloads
