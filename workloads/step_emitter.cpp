#include "workloads/step_emitter.h"

#include "models/collective_model.h"

#include <fmt/format.h>

#include "models/inductor_kernels.h"

namespace gpusim::workloads::detail {

std::string ew_name(EwFunc f) {
  switch (f) {
    case EwFunc::kAdd: return "add";
    case EwFunc::kMul: return "mul";
    case EwFunc::kMulScalar: return "mul_scalar";
    case EwFunc::kSilu: return "silu";
    case EwFunc::kGelu: return "gelu";
    case EwFunc::kCast: return "cast";
    case EwFunc::kMaskedFill: return "masked_fill";
    case EwFunc::kNeg: return "neg";
    case EwFunc::kPowScalar: return "pow_scalar";
    case EwFunc::kAddScalar: return "add_scalar";
    case EwFunc::kRsqrt: return "rsqrt";
    case EwFunc::kCos: return "cos";
    case EwFunc::kSin: return "sin";
    case EwFunc::kDiv: return "div";
    case EwFunc::kCopy: return "copy";
    case EwFunc::kCompareScalar: return "compare_scalar";
    case EwFunc::kFill: return "fill";
    case EwFunc::kClamp: return "clamp";
    case EwFunc::kFloorDivide: return "floor_divide";
    case EwFunc::kTanh: return "tanh";
    case EwFunc::kExp: return "exp";
    case EwFunc::kSqrt: return "sqrt";
    case EwFunc::kSigmoid: return "sigmoid";
    case EwFunc::kWhere: return "where";
    case EwFunc::kSiluBackward: return "silu_backward";
    case EwFunc::kLog: return "log";
    case EwFunc::kAbs: return "abs";
    case EwFunc::kSigmoidBackward: return "sigmoid_backward";
    case EwFunc::kEq: return "eq";
    case EwFunc::kTanhBackward: return "tanh_backward";
    case EwFunc::kMaskedScale: return "masked_scale";
    case EwFunc::kIsNegInf: return "isneginf";
  }
  return "?";
}

StepEmitter::StepEmitter(const ModelWorkload& w, const StepShape& s, ProgramBuilder& b)
    : w_(w), s_(s), b_(b) {
  math_ = w.dtype;
  act_ = activation_type(w.dtype);
  if (w.autocast) {
    amp_ = w.autocast;
    math_ = *w.autocast;
  }
}

hw::DType StepEmitter::dtype_of(const TensorUse& t) const {
  const auto it = dtypes_.find(t.tensor);
  return it != dtypes_.end() ? it->second : act_;
}

const StepEmitter::AutocastOperands* StepEmitter::autocast_operands(const std::string& label) const {
  const auto it = amp_operands_.find(label);
  return it != amp_operands_.end() ? &it->second : nullptr;
}

TensorUse StepEmitter::weight(const std::string& name, double elements) {
  return b_.state("w." + name, elements * hw::bytes_per_element(w_.dtype == hw::DType::kTf32 ? hw::DType::kFp32 : w_.dtype));
}

TensorUse StepEmitter::new_act(const std::string& name, double elements, hw::DType dtype) {
  TensorUse t = b_.activation(name, elements * hw::bytes_per_element(dtype));
  if (amp_) dtypes_[t.tensor] = dtype;
  return t;
}

namespace {

// One collective over `ranks` GPUs of the system, as NCCL runs it (models/collective_model.h).
hw::Launch collective_on(const hw::HardwareSpec& hw, models::Collective kind, double bytes, int ranks, hw::DType dtype,
                         const TensorUse& in, const TensorUse& out) {
  models::CollectiveProblem p{kind, bytes, ranks, std::min(ranks, hw.system.gpus), dtype};
  return models::lower_collective(p, hw, in, out);
}

}  // namespace

TensorUse StepEmitter::tp_all_reduce(const std::string& label, const TensorUse& x, std::int64_t elements) {
  const int tp = w_.parallel.tensor;
  if (tp <= 1) return x;
  emit(label, {collective_on(hw(), models::Collective::kAllReduce, static_cast<double>(elements) * bytes_per_element(dtype_of(x)),
                             tp, dtype_of(x), x, x)});
  return x;
}

TensorUse StepEmitter::tp_all_gather(const std::string& label, const TensorUse& x, std::int64_t elements) {
  const int tp = w_.parallel.tensor;
  if (tp <= 1) return x;
  const double bytes = static_cast<double>(elements) * tp * bytes_per_element(dtype_of(x));
  const TensorUse out = b_.activation(label, bytes);
  emit(label, {collective_on(hw(), models::Collective::kAllGather, bytes, tp, dtype_of(x), x, out)});
  return out;
}

TensorUse StepEmitter::expert_all_to_all(const std::string& label, const TensorUse& x, std::int64_t elements) {
  if (!w_.parallel.expert_all_to_all()) return x;
  const double bytes = static_cast<double>(elements) * bytes_per_element(dtype_of(x));
  const TensorUse out = b_.activation(label, bytes);
  emit(label, {collective_on(hw(), models::Collective::kAllToAll, bytes, w_.parallel.expert, dtype_of(x), x, out)});
  return out;
}

void StepEmitter::ddp_all_reduce(const std::vector<TensorUse>& grads, const std::vector<std::int64_t>& elements,
                                 hw::DType dtype) {
  const int dp = w_.parallel.data;
  if (dp <= 1) return;
  constexpr double kFirstBucketBytes = 1024.0 * 1024;       // torch's _DEFAULT_FIRST_BUCKET_BYTES
  constexpr double kBucketBytes = 25.0 * 1024 * 1024;       // DDP's default bucket_cap_mb
  const double element_bytes = bytes_per_element(dtype);
  b_.set_stream(1);
  double bytes = 0;
  std::vector<TensorUse> ready;  // the bucket's gradients: it waits for their producers
  int index = 0;
  auto flush = [&] {
    const std::string label = fmt::format("ddp.bucket[{}].allreduce", index++);
    const TensorUse bucket = b_.activation(label, bytes);
    hw::Launch l = collective_on(hw(), models::Collective::kAllReduce, bytes, dp, dtype, bucket, bucket);
    // The bucket waits for its gradients and the optimizer for the bucket (the gradients are
    // views into it): an order, not bytes (the plan moves them).
    for (const TensorUse& g : ready) {
      l.reads.push_back({g.tensor, 0});
      l.writes.push_back({g.tensor, 0});
    }
    emit(label, {std::move(l)});
    bytes = 0;
    ready.clear();
  };
  for (std::size_t i = grads.size(); i-- > 0;) {
    bytes += static_cast<double>(elements[i]) * element_bytes;
    ready.push_back(grads[i]);
    if (bytes >= (index == 0 ? kFirstBucketBytes : kBucketBytes)) flush();
  }
  if (bytes > 0) flush();
  b_.set_stream(0);
  b_.wait_for(grads);  // backward() returns once every bucket is reduced (DDP's finalize)
}

namespace {

// Whether stages `a` and `b` (adjacent) sit on different nodes: stage s holds GPUs
// s x group .. (s + 1) x group - 1 of the system, a group being its TP (or expert) GPUs.
bool stages_cross_nodes(const ModelWorkload& w, const hw::HardwareSpec& hw, int a, int b) {
  const int group = std::max(w.parallel.tensor, w.parallel.expert);
  return (a * group) / hw.system.gpus != (b * group) / hw.system.gpus;
}

}  // namespace

hw::Launch stage_transfer(const ModelWorkload& w, const hw::HardwareSpec& hw, int peer, double bytes, hw::DType dtype,
                          const TensorUse& in, const TensorUse& out) {
  const bool network = stages_cross_nodes(w, hw, w.stage, peer);
  models::CollectiveProblem p{models::Collective::kSendRecv, bytes, 2, network ? 1 : 2, dtype};
  return models::lower_collective(p, hw, in, out);
}

hw::DType activation_type(hw::DType dtype) {
  return dtype == hw::DType::kTf32 ? hw::DType::kFp32 : dtype == hw::DType::kFp8 ? hw::DType::kBf16 : dtype;
}

TensorUse StepEmitter::pp_receive(const std::string& label, std::int64_t elements, bool backward) {
  const double bytes = static_cast<double>(elements) * act_bytes();
  const TensorUse buffer = b_.activation(label, bytes);
  emit(label, {stage_transfer(w_, hw(), w_.stage + (backward ? 1 : -1), bytes, act_, buffer, buffer)});
  return buffer;
}

void StepEmitter::pp_send(const std::string& label, const TensorUse& x, std::int64_t elements, bool backward) {
  const double bytes = static_cast<double>(elements) * bytes_per_element(dtype_of(x));
  emit(label, {stage_transfer(w_, hw(), w_.stage + (backward ? -1 : 1), bytes, dtype_of(x), x, x)});
}

TensorUse StepEmitter::linear(const std::string& label, std::int64_t M, std::int64_t N, std::int64_t K,
                              bool bias, const TensorUse& x, const TensorUse& w) {
  TensorUse xg = x, wg = w;
  bool x_cast = false;
  if (amp_) {
    // Autocast's F.linear: the fp32 weight (and bias) cast once per region (its cache of leaf
    // casts), the input cast unless it is already in the autocast type.
    auto it = amp_weight_casts_.find(w.tensor);
    if (it == amp_weight_casts_.end()) {
      const TensorUse wc = pointwise(label + ".weight_cast", EwFunc::kCast, N * K, act_, *amp_, {w}, false);
      if (bias) pointwise(label + ".bias_cast", EwFunc::kCast, N, act_, *amp_, {weight(label + ".bias", static_cast<double>(N))}, false);
      it = amp_weight_casts_.emplace(w.tensor, wc).first;
    }
    wg = it->second;
    const hw::DType xt = dtype_of(x);
    if (xt != *amp_) {
      xg = pointwise(label + ".input_cast", EwFunc::kCast, M * K, xt, *amp_, {x}, false);
      x_cast = true;
    }
    amp_operands_[label] = AutocastOperands{xg, wg, x_cast};
  }
  const TensorUse y = new_act(label, static_cast<double>(M * N), lin());
  b_.emit_op(label, models::Op(models::OpKind::kLinear, math_, models::LinearShape{M, N, K, bias}),
             {{"x", xg}, {"w", wg}, {"y", y}},
             KernelSemantics{"linear", {xg.tensor, wg.tensor}, y.tensor, {M, N, K}, bias ? 1.0 : 0.0});
  return y;
}

void StepEmitter::batched_gemm(const std::string& label, std::int64_t M, std::int64_t N, std::int64_t K,
                               std::int64_t batch, hw::DType dtype, const TensorUse& a, const TensorUse& b,
                               const TensorUse& c, std::optional<KernelSemantics> sem) {
  models::GemmProblem g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.batch = batch;
  g.dtype = dtype;
  g.a = a.tensor;
  g.b = b.tensor;
  g.c = c.tensor;
  emit(label, models::lower_gemm(g, hw(), ""), std::move(sem));
}

TensorUse StepEmitter::pointwise(const std::string& label, EwFunc f, std::int64_t n, hw::DType in,
                                 hw::DType out, const std::vector<TensorUse>& inputs, bool strided,
                                 KernelSemantics sem) {
  const TensorUse y = new_act(label, static_cast<double>(n), out);
  models::ElementwiseProblem p;
  p.func = f;
  p.n = n;
  p.in = in;
  p.out = out;
  p.strided = strided;
  for (const auto& t : inputs) p.inputs.push_back(t.tensor);
  p.output = y.tensor;
  // The problem's names are already program names: lower under the empty tag.
  if (sem.what.empty()) sem.what = ew_name(f);
  if (sem.inputs.empty()) sem.inputs = p.inputs;
  sem.output = y.tensor;
  b_.emit(label, b_.lowering().lower_elementwise(p), std::move(sem));
  return y;
}

TensorUse StepEmitter::promoted(const std::string& label, EwFunc f, std::int64_t n,
                                const std::vector<TensorUse>& inputs, hw::DType out, bool strided) {
  const TensorUse y = new_act(label, static_cast<double>(n), out);
  models::ElementwiseProblem p;
  p.func = f;
  p.n = n;
  p.in = p.out = out;
  p.strided = strided;
  for (const auto& t : inputs) {
    p.inputs.push_back(t.tensor);
    p.input_types.push_back(dtype_of(t));
  }
  p.output = y.tensor;
  KernelSemantics sem;
  sem.what = ew_name(f);
  sem.inputs = p.inputs;
  sem.output = y.tensor;
  b_.emit(label, b_.lowering().lower_elementwise(p), std::move(sem));
  return y;
}

TensorUse StepEmitter::cast(const std::string& label, std::int64_t n, hw::DType from, hw::DType to,
                            const TensorUse& x) {
  if (from == to) return x;
  return pointwise(label, EwFunc::kCast, n, from, to, {x}, false);
}

TensorUse StepEmitter::triton(const std::string& label, const std::string& name, std::int64_t x, std::int64_t r,
                              const std::vector<TensorUse>& reads, const std::vector<TensorUse>& writes, int passes,
                              int threads, double flops_per_elem, std::int64_t blocks) {
  models::TritonKernel k;
  k.blocks = blocks;
  k.name = name;
  k.xnumel = x;
  k.rnumel = r;
  k.passes = passes;
  k.threads = threads;
  k.flops_per_elem = flops_per_elem;
  k.reads = reads;
  k.writes = writes;
  emit(label, {models::lower_triton(k, hw())});
  return writes.empty() ? TensorUse{} : writes.front();
}

}  // namespace gpusim::workloads::detail
