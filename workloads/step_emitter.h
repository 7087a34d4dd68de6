// Shared vocabulary of the step lowerings: framework-level pieces (a linear layer, an
// elementwise op, a cat) emitted into a ProgramBuilder with named tensors. Internal to
// workloads/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/families.h"
#include "workloads/kernel_program.h"
#include "workloads/transformer_step.h"

namespace gpusim::workloads::detail {

using hw::TensorUse;
using models::EwFunc;

// The semantics name of an elementwise function: "add", "mul", "mul_scalar", "silu", "cast", ...
std::string ew_name(EwFunc f);

// The type activations are stored in for a workload dtype: tf32 is fp32 in memory; fp8 GEMMs
// read fp8 weights and activations but the rest of the network (norms, attention, residuals)
// runs in bf16, as fp8 serving engines do.
hw::DType activation_type(hw::DType dtype);

// Pipeline parallelism: the NCCL send (or receive) of `bytes` between w's stage and `peer`, over
// NVLink within a node or the network across nodes.
hw::Launch stage_transfer(const ModelWorkload& w, const hw::HardwareSpec& hw, int peer, double bytes, hw::DType dtype,
                          const TensorUse& in, const TensorUse& out);

class StepEmitter {
 public:
  StepEmitter(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b);

  const ModelConfig& m() const { return w_.model; }
  const ModelWorkload& workload() const { return w_; }
  const StepShape& s() const { return s_; }
  ProgramBuilder& b() { return b_; }
  const hw::HardwareSpec& hw() const { return b_.hw(); }
  std::int64_t tokens() const { return s_.tokens(); }
  hw::DType act() const { return act_; }    // activation storage type
  hw::DType math() const { return math_; }  // GEMM type (tf32 for fp32 storage with tf32 math)
  double act_bytes() const { return hw::bytes_per_element(act_); }
  // Mixed precision (a training step's `autocast`): the weights and the residual stream stay in
  // fp32 (act()), and autocast runs each linear layer and attention in this type.
  const std::optional<hw::DType>& amp() const { return amp_; }
  // The type linear layers and attention produce: the autocast type, else act().
  hw::DType lin() const { return amp_.value_or(act_); }
  // The type an activation was created with (new_act, pointwise); act() for anything else.
  hw::DType dtype_of(const TensorUse& t) const;
  // Under autocast, what a linear layer's GEMM read: its input and weight after autocast's casts
  // (the weight cast once per forward, autocast's cache), for the backward's GEMMs; and whether
  // the input was cast (its gradient is cast back). Null without autocast or for an unknown label.
  struct AutocastOperands {
    TensorUse x, w;
    bool x_cast = false;
  };
  const AutocastOperands* autocast_operands(const std::string& label) const;
  // A new autocast region (each forward): its weight-cast cache starts empty.
  void begin_autocast() { amp_weight_casts_.clear(); }

  // transformers' continuous batching (attn_implementation "paged|sdpa"): s() is its packed
  // batch (one sequence of every scheduled token, padding included) and this the ragged step it
  // packs, whose sequences attend `keys` keys gathered from the paged cache.
  struct PackedBatch {
    StepShape ragged;
    std::int64_t keys = 0;
  };
  const std::optional<PackedBatch>& packed() const { return packed_; }
  void set_packed(PackedBatch p) { packed_ = std::move(p); }

  TensorUse weight(const std::string& name, double elements);
  TensorUse new_act(const std::string& name, double elements, hw::DType dtype);
  TensorUse new_act(const std::string& name, double elements) { return new_act(name, elements, act_); }
  // An activation sized in bytes (index and routing tensors of no floating-point type).
  TensorUse new_bytes(const std::string& name, double bytes) { return b_.activation(name, bytes); }

  // y = x @ W^T (+ b): F.linear, lowered by the GEMM model. Its semantics: "linear", dims
  // {M, N, K}, scalar 1 with a bias.
  TensorUse linear(const std::string& label, std::int64_t M, std::int64_t N, std::int64_t K,
                   bool bias, const TensorUse& x, const TensorUse& w);
  // One elementwise kernel over n elements (see models::ElementwiseProblem). Its semantics is
  // `sem` completed: `what` defaults to the function's name (ew_name), `inputs` to `inputs`,
  // and `output` is the result.
  TensorUse pointwise(const std::string& label, EwFunc f, std::int64_t n, hw::DType in,
                      hw::DType out, const std::vector<TensorUse>& inputs, bool strided,
                      KernelSemantics sem = {});
  // One TorchInductor Triton kernel (models/inductor_kernels.h): a pointwise one over `x`
  // elements (r = 0) or a reduction of `x` rows of `r`. Returns its first write.
  TensorUse triton(const std::string& label, const std::string& name, std::int64_t x, std::int64_t r,
                   const std::vector<TensorUse>& reads, const std::vector<TensorUse>& writes, int passes = 1,
                   int threads = 0, double flops_per_elem = 2, std::int64_t blocks = 0);
  // torch.matmul of `batch` [M, K] x [K, N] products into `c` (cuBLAS strided batched GEMM).
  void batched_gemm(const std::string& label, std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t batch,
                    hw::DType dtype, const TensorUse& a, const TensorUse& b, const TensorUse& c,
                    std::optional<KernelSemantics> sem = std::nullopt);
  // A binary elementwise op whose inputs differ in type (bf16 and fp32 under autocast):
  // TensorIterator promotes them to `out` and converts while loading.
  TensorUse promoted(const std::string& label, EwFunc f, std::int64_t n, const std::vector<TensorUse>& inputs,
                     hw::DType out, bool strided);
  // x.to(to) when the types differ; returns x unchanged otherwise.
  TensorUse cast(const std::string& label, std::int64_t n, hw::DType from, hw::DType to,
                 const TensorUse& x);
  // Several GPUs (workloads/parallelism.h); each returns its input unchanged when the group is
  // one GPU. An all-reduce of x (`elements` of act()) over the tensor-parallel group, in place.
  TensorUse tp_all_reduce(const std::string& label, const TensorUse& x, std::int64_t elements);
  // The all-gather of a vocabulary-parallel lm_head's logits (`elements` per GPU) over the group.
  TensorUse tp_all_gather(const std::string& label, const TensorUse& x, std::int64_t elements);
  // Expert parallelism with data-parallel attention: routed rows (`elements`) to the GPUs that
  // hold their experts, or their outputs back.
  TensorUse expert_all_to_all(const std::string& label, const TensorUse& x, std::int64_t elements);
  // Data parallelism (training): DistributedDataParallel's all-reduce of the gradients `grads`
  // (of `elements` each, in model.parameters() order, of `dtype`). DDP fills its buckets in reverse
  // order (1 MiB first, then bucket_cap_mb's 25 MiB) and all-reduces each on its own stream as
  // soon as the backward has produced its gradients, so the buckets overlap the backward.
  void ddp_all_reduce(const std::vector<TensorUse>& grads, const std::vector<std::int64_t>& elements, hw::DType dtype);
  // Pipeline parallelism: a stage's input (`elements` of act()) received from the stage before it,
  // or its output sent to the stage after it (NCCL send/recv); in the backward, the gradients go
  // the other way (`backward`: received from the next stage, sent to the previous one).
  TensorUse pp_receive(const std::string& label, std::int64_t elements, bool backward = false);
  void pp_send(const std::string& label, const TensorUse& x, std::int64_t elements, bool backward = false);
  void emit(const std::string& label, std::vector<hw::Launch> launches,
            std::optional<KernelSemantics> sem = std::nullopt) {
    b_.emit(label, std::move(launches), std::move(sem));
  }

 private:
  const ModelWorkload& w_;
  StepShape s_;
  ProgramBuilder& b_;
  hw::DType act_, math_;
  std::optional<hw::DType> amp_;
  std::optional<PackedBatch> packed_;
  std::map<std::string, hw::DType> dtypes_;                      // by tensor name
  std::map<std::string, TensorUse> amp_weight_casts_;            // by weight tensor name
  std::map<std::string, AutocastOperands> amp_operands_;         // by linear label
};

}  // namespace gpusim::workloads::detail
