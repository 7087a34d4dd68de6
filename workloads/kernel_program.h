// Builds the kernel DAG of one transformer step from framework-level pieces, the way eager
// PyTorch runs them: each piece is lowered to launches by the kernel cost models, and each
// launch waits for the kernels that produced the tensors it reads. It also tracks activation
// lifetimes, so the step's activation peak comes from the same program the engine runs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"
#include "models/kernel_model.h"
#include "models/op.h"
#include "workloads/kernel_dag.h"
#include "workloads/op_lowering_cache.h"

namespace gpusim::workloads {

class ProgramBuilder {
 public:
  // Ops are lowered through `lowering`, which the run's other steps on the same chip share.
  explicit ProgramBuilder(OpLoweringCache& lowering) : lowering_(lowering) {}

  const hw::HardwareSpec& hw() const { return lowering_.hw(); }
  OpLoweringCache& lowering() { return lowering_; }

  // A tensor that outlives the step (a weight, the KV cache): never counted as an activation.
  hw::TensorUse state(const std::string& name, double bytes);
  // A new activation of this step; the name is made unique ("x" -> "x#12").
  hw::TensorUse activation(const std::string& name, double bytes);
  // An activation that stays allocated to the end of the step whoever reads it last (a
  // parameter's .grad, freed only by the next zero_grad).
  void hold_to_end(const hw::TensorUse& t) {
    if (const auto it = activations_.find(t.tensor); it != activations_.end()) it->second.held = true;
  }

  // Appends `launches` as framework op `label`. A launch waits for the producers of what it
  // reads and for the op's previous launch. `semantics` (what the op computes) goes on the last.
  void emit(const std::string& label, std::vector<hw::Launch> launches,
            std::optional<KernelSemantics> semantics = std::nullopt);

  // Launches emitted from here on go to `stream` (0: the current stream; another runs beside it,
  // waiting only for what its launches read).
  void set_stream(int stream) { stream_ = stream; }
  // The next launch waits for the producers of `tensors` too (cudaStreamWaitEvent: the current
  // stream waits for a side stream's work, as DDP's backward does for its buckets).
  void wait_for(const std::vector<hw::TensorUse>& tensors);

  // The host waits for the last launch emitted to end before it issues more (.item(), .cpu()).
  void mark_host_sync() {
    if (dag_.size() > 0) dag_.set_host_sync(static_cast<KernelDag::Vertex>(dag_.size() - 1));
  }

  // Lowers `op` with the cost models, renaming the model's tensors to the program's tensors per
  // `names` (local name -> tensor); unnamed locals stay private to the op ("<tag>.<local>").
  void emit_op(const std::string& label, const models::Op& op,
               const std::map<std::string, hw::TensorUse>& names,
               std::optional<KernelSemantics> semantics = std::nullopt);

  // Layers, for steps whose layers repeat (workloads/layer_repeat.h): a lowering lowers the first
  // layers_to_lower(layers) of a model's layers, calling begin_layer() before each and
  // end_layers() after the last. A limit (set by whoever builds the step) lowers fewer.
  void limit_layers(std::int64_t layers) { layer_limit_ = layers; }
  std::int64_t layers_to_lower(std::int64_t layers) const {
    return layer_limit_ && *layer_limit_ < layers ? *layer_limit_ : layers;
  }
  void begin_layer() { layer_starts_.push_back(dag_.size()); }
  void end_layers() { layers_end_ = dag_.size(); }
  // The first vertex of each layer lowered, and the first after the last layer.
  const std::vector<std::size_t>& layer_starts() const { return layer_starts_; }
  std::size_t layers_end() const { return layers_end_; }

  // Phases of a training step (forward, backward, optimizer): the launches emitted from here on
  // belong to `name` until the next call.
  void begin_phase(const std::string& name) { phase_starts_.emplace_back(name, dag_.size()); }
  const std::vector<std::pair<std::string, std::size_t>>& phase_starts() const { return phase_starts_; }

  const KernelDag& dag() const { return dag_; }
  KernelDag take_dag() { return std::move(dag_); }
  // The total size of activations alive (produced and still to be read) while each vertex runs,
  // and the largest of them (0 without any).
  std::vector<double> activation_profile() const;
  double activation_peak_bytes() const;

 private:
  struct Lifetime {
    double bytes = 0;
    std::int64_t first = -1, last = -1;  // vertices that write it first and read it last
    bool held = false;                   // alive to the end of the step (hold_to_end)
  };
  OpLoweringCache& lowering_;
  KernelDag dag_;
  std::unordered_map<std::string, KernelDag::Vertex> producer_;
  // Sizes are whole bytes (exact in a double), so the peak does not depend on visiting order.
  std::unordered_map<std::string, Lifetime> activations_;
  std::int64_t next_id_ = 0;
  std::optional<std::int64_t> layer_limit_;
  std::vector<std::size_t> layer_starts_;
  std::size_t layers_end_ = 0;
  std::vector<std::pair<std::string, std::size_t>> phase_starts_;
  int stream_ = 0;
  std::vector<KernelDag::Vertex> pending_waits_;
};

}  // namespace gpusim::workloads
