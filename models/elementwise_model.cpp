// add, mul, silu, gelu and cast: ATen's elementwise kernels (aten/src/ATen/native/cuda/
// CUDALoops.cuh, PyTorch 2.11), confirmed on H100 by ops_h100.csv:
//  * contiguous, no dynamic cast: vectorized_elementwise_kernel<vec, f>, 128 threads
//    (num_threads() = 4 warps), each thread 8 elements (elems_per_thread: 16 only when all
//    operands together are 1 byte) in vectors of vec = 16 / sizeof(output) elements (capped at 4
//    for 1-byte outputs): grid = ceil(n / 1024). bf16 -> <8>, fp32 -> <4>.
//  * a cast the functor does not do itself (bf16 -> fp32, ...): unrolled_elementwise_kernel with
//    LoadWithCast/StoreWithCast, 4 elements per thread: grid = ceil(n / 512). fp32 -> bf16/fp16
//    have dedicated vectorized functors (bfloat16_copy_kernel_cuda).
//  * a broadcast operand (masked_fill's S x S mask): the legacy elementwise_kernel<128, vt> with
//    an offset calculator, vt = 2 for 4-byte outputs, else 4.
// Tensors whose byte offsets overflow int32 are split by TensorIterator into halves until each
// piece fits (naive attention's 8x12x4096x4096 fp32 scores: 4 launches).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "models/common.h"
#include "models/families.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;

struct Func {
  int arity = 1;            // tensor inputs
  double fp32_per_elt = 0;  // CUDA-core FP32 ops per element (opmath is float)
  double sfu_per_elt = 0;   // special-function ops per element
  int regs = 32;            // registers per thread (ops_h100.csv)
  std::string functor;      // the kernel's functor, as the profiler names it
  int bool_inputs = 0;      // further inputs of one byte an element (dropout's mask)
  // Cycles one element's arithmetic takes as a dependent chain, where the functor's branches
  // (IEEE division's range check, erff's argument ranges) keep the compiler from interleaving a
  // thread's elements: they run one after another once its loads arrive (0: interleaved, hidden).
  double chain_cycles = 0;
};

std::string scalar_name(hw::DType d, bool is_bool = false) {
  if (is_bool) return "bool";
  switch (d) {
    case hw::DType::kBf16: return "c10::BFloat16";
    case hw::DType::kFp16: return "c10::Half";
    case hw::DType::kFp8: return "c10::Float8_e4m3fn";
    default: return "float";
  }
}

Func func_of(const ElementwiseProblem& p) {
  const std::string t = scalar_name(p.out, p.bool_out);
  const bool half = detail::elt_bytes(p.out) < 4;
  switch (p.func) {
    case EwFunc::kAdd:  // a + alpha * b in float: one FMA
      return {2, 2, 0, half ? 34 : 32, fmt::format("at::native::CUDAFunctor_add<{}>", t)};
    case EwFunc::kMul:
      return {2, 1, 0, half ? 40 : 32,
              fmt::format("at::native::BinaryFunctor<{0}, {0}, {0}, "
                          "at::native::binary_internal::MulFunctor<float> >",
                          t)};
    case EwFunc::kMulScalar:  // tensor * python scalar
      return {1, 1, 0, 32,
              fmt::format("at::native::AUnaryFunctor<{0}, {0}, {0}, "
                          "at::native::binary_internal::MulFunctor<float> >",
                          t)};
    // x / (1 + exp(-x)): ex2 and a reciprocal on the SFU, a few FP32 ops. The division's range
    // check and branch make each element a chain of about 130 cycles (ex2, reciprocal, Newton
    // steps, check, conversions): launches of up to 2000 CTAs ran 0.3-0.5 us longer than their
    // loads alone (issue 16's sets 3-23, 69 bf16 rows a GPU; 100-160 cycles tried, 130 best).
    case EwFunc::kSilu:
      return {1, 4, 2, 32,
              fmt::format("at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)"
                          "::{{lambda({})#1}}",
                          t),
              0, 130};
    // 0.5 x (1 + erf(x / sqrt 2)): erff's polynomials, branches and an exp, with the bf16
    // conversions about 44 issue slots (88 FP32 "flops") an element: large launches on the H200,
    // whose bandwidth outruns them, run at 1.34-1.46 ns per million elements (sets 3-23; 80 left
    // them 9% fast). An element's chain is about 90 cycles (small launches 0.25-0.4 us longer
    // than their loads; 60-100 tried). The H100 runs large ones 6% slower than either its
    // bandwidth or this rate allows alone: the two interfere, which the engine's max does not.
    case EwFunc::kGelu:
      return {1, 88, 1, 32,
              fmt::format("at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
                          "at::native::GeluType)::{{lambda({})#1}}",
                          t),
              0, 90};
    case EwFunc::kCast:  // one conversion
      return {1, 1, 0, 32,
              p.out == hw::DType::kBf16 ? "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}"
              : p.out == hw::DType::kFp16
                  ? "at::native::float16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}"
                  : "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
                    "const::{lambda()#7}::operator()() const::{lambda(float)#1}"};  // bf16 -> fp32
    case EwFunc::kNeg:
      return {1, 1, 0, 32, fmt::format("at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{{lambda({})#1}}", t)};
    case EwFunc::kPowScalar:  // x ** 2 is x * x
      return {1, 1, 0, 32, fmt::format("at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<{0}, {0}>", t)};
    case EwFunc::kAddScalar:  // x + eps
      return {1, 1, 0, 32, fmt::format("at::native::CUDAFunctorOnSelf_add<{}>", t)};
    case EwFunc::kRsqrt:
      return {1, 1, 1, 32, fmt::format("at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{{lambda({})#1}}", t)};
    case EwFunc::kCos:  // range reduction and a polynomial
      return {1, 12, 1, 32, fmt::format("at::native::cos_kernel_cuda(at::TensorIteratorBase&)::{{lambda({})#1}}", t)};
    case EwFunc::kSin:
      return {1, 12, 1, 32, fmt::format("at::native::sin_kernel_cuda(at::TensorIteratorBase&)::{{lambda({})#1}}", t)};
    case EwFunc::kTanh:
      return {1, 4, 1, 32, fmt::format("at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{{lambda({})#1}}", t)};
    case EwFunc::kDiv:
      return {2, 2, 1, 32, fmt::format("at::native::BinaryFunctor<{0}, {0}, {0}, at::native::binary_internal::DivFunctor<{0}> >", t)};
    case EwFunc::kCopy:
      return {1, 0, 0, 32, fmt::format("at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{{lambda({})#1}}", t)};
    case EwFunc::kCompareScalar:
      return {1, 1, 0, 32, "at::native::compare_scalar_kernel<long>(at::TensorIteratorBase&, at::native::(anonymous namespace)::OpType, long)::{lambda(long)#1}"};
    case EwFunc::kFill:
      return {0, 0, 0, 16, fmt::format("at::native::FillFunctor<{}>", t)};
    case EwFunc::kClamp:
      return {1, 1, 0, 32, "at::native::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda(long)#1}"};
    case EwFunc::kFloorDivide:
      return {1, 4, 0, 34, "at::native::BUnaryFunctor<long, long, long, at::native::binary_internal::div_floor_kernel_cuda(at::TensorIteratorBase&)::{lambda(long, long)#1}>"};
    case EwFunc::kExp:  // ex2 on the SFU after a scale
      return {1, 2, 1, 32, fmt::format("at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{{lambda({})#1}}", t)};
    case EwFunc::kSqrt:
      return {1, 1, 1, 32, fmt::format("at::native::sqrt_kernel_cuda(at::TensorIteratorBase&)::{{lambda({})#1}}", t)};
    case EwFunc::kSigmoid:  // 1 / (1 + exp(-x)): ex2 and a reciprocal
      return {1, 3, 2, 32, fmt::format("at::native::sigmoid_kernel_cuda(at::TensorIteratorBase&)::{{lambda({})#1}}", t)};
    case EwFunc::kWhere:  // torch.where(bool mask, tensor, scalar): a select per element
      return {2, 1, 0, 32,
              fmt::format("at::native::(anonymous namespace)::where_kernel_impl(at::TensorIterator&)::"
                          "{{lambda(bool, {0}, {0})#1}}",
                          t)};
    case EwFunc::kSiluBackward:  // grad * s * (1 + x (1 - s)), s = sigmoid(x): ex2, a reciprocal
      return {2, 6, 2, 32,
              fmt::format("at::native::(anonymous namespace)::silu_backward_kernel(at::TensorIteratorBase&)"
                          "::{{lambda({0}, {0})#1}}",
                          t)};
    case EwFunc::kLog:  // lg2 on the SFU and a scale
      return {1, 2, 1, 32, fmt::format("at::native::log_kernel_cuda(at::TensorIteratorBase&)::{{lambda({})#1}}", t)};
    case EwFunc::kAbs:
      return {1, 1, 0, 32, fmt::format("at::native::AbsFunctor<{}>", t)};
    case EwFunc::kEq:  // a == b into a bool (the inputs' type is `in`)
      return {2, 1, 0, 32,
              fmt::format("at::native::BinaryFunctor<{0}, {0}, bool, at::native::(anonymous namespace)::CompareEqFunctor<{0}> >",
                          scalar_name(p.in))};
    case EwFunc::kSigmoidBackward:  // grad * (1 - y) * y from sigmoid's output y
      return {2, 2, 0, 32,
              fmt::format("at::native::sigmoid_backward_kernel_cuda(at::TensorIteratorBase&)::{{lambda({0}, {0})#1}}", t)};
    case EwFunc::kTanhBackward:  // grad * (1 - y * y) from tanh's output y
      return {2, 2, 0, 32,
              fmt::format("at::native::tanh_backward_kernel_cuda(at::TensorIteratorBase&)::{{lambda({0}, {0})#1}}", t)};
    case EwFunc::kMaskedScale:  // grad * mask * scale: a select and a multiply
      return {1, 2, 0, 32,
              fmt::format("at::native::(anonymous namespace)::masked_scale_kernel<bool, {}, float>", t), 1};
    case EwFunc::kIsNegInf:  // x == -inf into a bool
      return {1, 1, 0, 32,
              fmt::format("at::native::(anonymous namespace)::isneginf_kernel_impl(at::TensorIteratorBase&)::"
                          "{{lambda()#1}}::operator()() const::{{lambda()#2}}::operator()() const::{{lambda({})#1}}",
                          scalar_name(p.in))};
    case EwFunc::kMaskedFill:  // select
      return {1, 1, 0, 18,
              "at::native::gpu_kernel_impl_nocast<at::native::(anonymous namespace)::"
              "masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda(float, bool)#1}>"};
  }
  return {};
}

enum class Path { kVectorized, kUnrolled, kLegacy };

// One launch over n elements; `share` is this piece's fraction of the op's tensors.
Launch lower_elementwise_piece(const ElementwiseProblem& p, std::int64_t n, double share,
                               const hw::HardwareSpec& hw) {
  if (n <= 0) throw ModelError("elementwise: the element count must be positive");
  const Func f = func_of(p);
  const double in_b = detail::elt_bytes(p.in), out_b = detail::elt_bytes(p.out);
  // Type promotion: some input is converted as it loads (ElementwiseProblem::input_types).
  bool promoting = false;
  // A where's bool mask (mask_bytes) is charged as masked_fill's is, not as an input of type `in`.
  const bool where_mask = p.func == EwFunc::kWhere && p.mask_bytes > 0;
  double in_bytes = (f.arity - (where_mask ? 1 : 0)) * in_b + f.bool_inputs;  // bytes read per element
  if (!p.input_types.empty()) {
    in_bytes = 0;
    for (const hw::DType t : p.input_types) {
      in_bytes += detail::elt_bytes(t);
      promoting = promoting || t != p.out;
    }
  }

  Path path = Path::kVectorized;
  if (p.func == EwFunc::kMaskedFill || p.strided) {
    path = Path::kLegacy;
  } else if (promoting) {
    path = Path::kUnrolled;
  } else if (p.func == EwFunc::kCast && p.in != p.out &&
             !(p.in == hw::DType::kFp32 &&
               (p.out == hw::DType::kBf16 || p.out == hw::DType::kFp16))) {
    path = Path::kUnrolled;
  }
  // launch_vectorized_kernel: io_size = sum of operand sizes; 16 elements per thread when it is
  // 1 byte, else 8. Unrolled: thread_work_size() = 4. Legacy: vt = 2 (4-byte output) or 4.
  const double io = in_bytes + out_b;
  std::int64_t per_thread = io <= 1 ? 16 : 8;
  std::int64_t vec = std::max<std::int64_t>(1, 16 / static_cast<std::int64_t>(out_b));
  if (out_b < 2) vec = std::min<std::int64_t>(vec, 4);
  if (path == Path::kUnrolled) per_thread = 4;
  // Legacy: vt = 2 for a 4-byte output computed in its own type, else 4 (also when the
  // functor's inputs are cast, as bf16 x fp32 -> fp32 in MoE routing weights).
  if (path == Path::kLegacy) per_thread = out_b >= 4 && p.in == p.out && !promoting ? 2 : 4;
  constexpr std::int64_t kThreads = 128;
  const std::int64_t per_cta = kThreads * per_thread;

  Launch l;
  switch (path) {
    case Path::kVectorized:
      l.name = fmt::format("void at::native::vectorized_elementwise_kernel<{}, {}, std::array<char*, {}ul> >",
                           vec, f.functor, f.arity + f.bool_inputs + 1);
      break;
    case Path::kUnrolled:
      l.name = fmt::format(
          "void at::native::unrolled_elementwise_kernel<{0}, std::array<char*, {1}ul>, 4, "
          "TrivialOffsetCalculator<{2}, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
          "at::native::memory::LoadWithCast<{2}>, at::native::memory::StoreWithCast<1> >",
          f.functor, f.arity + 1, f.arity);
      break;
    case Path::kLegacy:
      l.name = fmt::format("void at::native::elementwise_kernel<128, {}, at::native::{}<{}> >", per_thread,
                           promoting ? "gpu_kernel_impl" : "gpu_kernel_impl_nocast", f.functor);
      break;
  }
  l.family = "elementwise";
  l.grid = {ceil_div(n, per_cta), 1, 1};
  l.block = {kThreads, 1, 1};
  l.regs_per_thread = f.regs;
  l.smem_per_cta = 0;

  // The broadcast mask (S x S bools reused by every batch and head) is read once from DRAM and
  // then from L2; each CTA loads its elements' mask bytes.
  const double mask_l2_per_elt = p.func == EwFunc::kMaskedFill || where_mask ? 1.0 : 0.0;
  const double mask_unique = static_cast<double>(p.mask_bytes) * share;
  const auto work = [&](std::int64_t elts) {
    hw::CtaWork w;
    const double e = static_cast<double>(elts);
    w.fp32_flops = e * f.fp32_per_elt;
    w.sfu_ops = e * f.sfu_per_elt;
    const double reads = e * in_bytes;
    const double writes = e * out_b;
    w.l2_bytes = reads + writes + e * mask_l2_per_elt;
    w.dram_read_bytes = reads + mask_unique * e / static_cast<double>(n);
    w.dram_write_bytes = writes;
    // Every thread issues all its loads before computing (the vectorized and unrolled
    // policies load the whole thread's work first): the CTA's whole input is in flight. The
    // first-load latency is therefore what this cap charges; no separate fixed time.
    w.max_inflight_bytes = static_cast<double>(kThreads * per_thread) * (in_bytes + mask_l2_per_elt);
    // Elements a thread actually handles (a CTA at the tail may have fewer than per_thread).
    const double mine = std::min(static_cast<double>(per_thread),
                                 std::ceil(e / static_cast<double>(kThreads)));
    if (path == Path::kUnrolled) {
      // LoadWithCast converts each element through a run-time dtype switch between its loads,
      // so a thread's loads do not overlap: about 1.5 DRAM round trips per element on the
      // critical path (calibrated on the bf16 -> fp32 cast rows of the calibration set).
      w.critical_path = sim::Time::from_seconds(1.5 * mine * hw.dram.latency.seconds());
    } else if (path == Path::kLegacy && (p.func != EwFunc::kMaskedFill || p.strided)) {
      // The legacy loop computes each element's offsets and loads it inside the loop, so a
      // thread has one element per operand in flight and its vt elements are a dependent
      // chain (the strided RoPE and MoE kernels of validation/data/hf_models_h100.json.gz).
      w.max_inflight_bytes = static_cast<double>(kThreads) * in_bytes;
      w.critical_path = sim::Time::from_seconds(mine * hw.dram.latency.seconds());
    }
    // Elements whose arithmetic is a branchy chain run one after another after the loads.
    if (path == Path::kVectorized && f.chain_cycles > 0) {
      const double chain_seconds = mine * f.chain_cycles / hw.clocks.sustained_other_hz;
      w.critical_path = sim::Time::from_seconds(hw.dram.latency.seconds() + chain_seconds);
    }
    // Precise sin/cos (range reduction with a slow path) add about 2 DRAM round trips' worth
    // of dependent arithmetic to a thread (rotary table rows of the same file).
    if (p.func == EwFunc::kCos || p.func == EwFunc::kSin) {
      w.critical_path = w.critical_path + sim::Time::from_seconds(2.0 * hw.dram.latency.seconds());
    }
    return w;
  };
  const std::int64_t full = n / per_cta;
  const std::int64_t rem = n % per_cta;
  detail::add_class(l, full, work(per_cta));
  if (rem > 0) detail::add_class(l, 1, work(rem));
  return l;
}

// TensorIterator::with_32bit_indexing: halve until each piece's byte offsets fit in int32.
int pieces_for(std::int64_t n, double max_elt_bytes) {
  int pieces = 1;
  constexpr double kMax = static_cast<double>(std::numeric_limits<std::int32_t>::max());
  while (static_cast<double>(ceil_div(n, pieces)) * max_elt_bytes > kMax) pieces *= 2;
  return pieces;
}

}  // namespace

std::vector<Launch> lower_elementwise(const ElementwiseProblem& p,
                                      const hw::HardwareSpec& hw,
                                      const std::string& tag) {
  const double max_b = std::max(detail::elt_bytes(p.in), detail::elt_bytes(p.out));
  const int pieces = pieces_for(p.n, max_b);
  std::vector<Launch> out;
  const double in_total = static_cast<double>(p.n) * detail::elt_bytes(p.in);
  const double out_total = static_cast<double>(p.n) * detail::elt_bytes(p.out);
  for (int i = 0; i < pieces; ++i) {
    // Halving splits: the first pieces take the ceiling.
    const std::int64_t lo = p.n / pieces, rem = p.n % pieces;
    const std::int64_t n = lo + (i < rem ? 1 : 0);
    const double share = static_cast<double>(n) / static_cast<double>(p.n);
    Launch l = lower_elementwise_piece(p, n, share, hw);
    // A where's first input is its bool mask, of mask_bytes; masked_fill's mask is not an input.
    const bool where_mask = p.func == EwFunc::kWhere && p.mask_bytes > 0;
    for (std::size_t j = 0; j < p.inputs.size(); ++j) {
      const double bytes = where_mask && j == 0 ? static_cast<double>(p.mask_bytes) : in_total * share;
      l.reads.push_back(detail::tensor(tag, p.inputs[j], bytes));
    }
    if (p.mask_bytes > 0 && !where_mask) l.reads.push_back(detail::tensor(tag, "mask", static_cast<double>(p.mask_bytes)));
    l.writes.push_back(detail::tensor(tag, p.output, out_total * share));
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<Launch> ElementwiseModel::lower(const Op& op, const hw::HardwareSpec& hw,
                                            const std::string& tag) const {
  ElementwiseProblem p;
  p.output = "out";
  if (op.kind() == OpKind::kCast) {
    const auto& c = op.as<CastShape>();
    p.func = EwFunc::kCast;
    p.n = c.n;
    p.in = c.from;
    p.out = c.to;
    p.inputs = {"in"};
  } else {
    const auto& s = op.as<ElementwiseShape>();
    p.n = s.n;
    p.in = p.out = op.dtype();
    switch (op.kind()) {
      case OpKind::kAdd: p.func = EwFunc::kAdd; break;
      case OpKind::kMul: p.func = EwFunc::kMul; break;
      case OpKind::kSilu: p.func = EwFunc::kSilu; break;
      case OpKind::kGelu: p.func = EwFunc::kGelu; break;
      case OpKind::kCopy: p.func = EwFunc::kCopy; break;
      default: throw ModelError(fmt::format("elementwise: cannot lower {}", op_name(op.kind())));
    }
    p.inputs = p.func == EwFunc::kAdd || p.func == EwFunc::kMul ? std::vector<std::string>{"a", "b"}
                                                                : std::vector<std::string>{"x"};
    p.strided = s.strided;
  }
  if (p.in == hw::DType::kTf32) p.in = hw::DType::kFp32;  // tf32 is fp32 in memory
  if (p.out == hw::DType::kTf32) p.out = hw::DType::kFp32;
  return lower_elementwise(p, hw, tag);
}

}  // namespace gpusim::models
