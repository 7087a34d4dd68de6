// The mapping rules of `gpusim replay`, one per op family, each reading the shapes the op
// recorded (record_shapes) and lowering them with the cost model the simulator's own workloads
// use (models/). An op instance is the run of consecutive activities one recorded op launched
// on one stream: a GEMM and its split-K reduction, cuDNN's memset and kernels.
#include "replay/kernel_mapping.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "models/common.h"
#include "models/families.h"
#include "models/op.h"
#include "hw/gpu_engine.h"
#include "models/training_kernels.h"
#include "sim/error.h"

namespace gpusim::replay {
namespace {

using hw::DType;
using hw::Launch;
using hw::TensorUse;
using models::EwFunc;

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// PyTorch's scalar type names as the profiler writes them.
std::optional<DType> dtype_of(const std::string& type) {
  if (type == "c10::BFloat16") return DType::kBf16;
  if (type == "c10::Half") return DType::kFp16;
  if (type == "float") return DType::kFp32;
  return std::nullopt;
}

// Bytes of an element of a recorded type (integers and bools included, for copies).
double type_bytes(const std::string& type) {
  if (type == "c10::BFloat16" || type == "c10::Half" || type == "short int") return 2;
  if (type == "float" || type == "int") return 4;
  if (type == "double" || type == "long int" || type == "c10::complex<float>") return 8;
  if (type == "bool" || type == "unsigned char" || type == "signed char") return 1;
  return 4;
}

// The profiler records no tensor identity: an activation is named by its shape and type, so an
// op reading a tensor of the shape and type an earlier op wrote finds it where that op left it
// (in L2 when it fits), as chains of elementwise ops in model code do.
std::string activation(const std::vector<std::int64_t>& dims, const std::string& type) {
  return fmt::format("act[{}]:{}", fmt::join(dims, "x"), type);
}

// The type earlier ops recorded for a tensor shape (the latest one), for ops that record none
// (a cat's TensorList).
using TypesByShape = std::map<std::vector<std::int64_t>, std::string>;

struct Context {
  const RecordedOp& op;
  const std::vector<const RecordedActivity*>& acts;
  const hw::HardwareSpec& hw;
  const models::KernelModelRegistry& models;
  std::string tag;
  const TypesByShape* seen = nullptr;
  bool scalars_recorded = true;  // false: the trace format records no scalar arguments
  TensorUse tensor(std::string_view name, double bytes) const { return models::detail::tensor(tag, name, bytes); }
  const std::vector<std::int64_t>& dims(std::size_t i) const {
    static const std::vector<std::int64_t> none;
    return i < op.dims.size() ? op.dims[i] : none;
  }
  std::string type(std::size_t i) const { return i < op.types.size() ? op.types[i] : std::string(); }
  std::string concrete(std::size_t i) const { return i < op.concrete.size() ? op.concrete[i] : std::string(); }
  bool kernel_named(std::string_view part) const {
    return std::any_of(acts.begin(), acts.end(), [&](const RecordedActivity* a) { return contains(a->name, part); });
  }
};

// The rule's launches, or nullopt with `why` set.
using Rule = std::optional<std::vector<Launch>> (*)(const Context&, std::string& why);

std::optional<std::vector<Launch>> gemm_rule(const Context& c, std::string& why) {
  const std::string& n = c.op.name;
  const bool batched = n == "aten::bmm" || n == "aten::baddbmm";
  const std::size_t a = (n == "aten::addmm" || n == "aten::baddbmm") ? 1 : 0;
  const auto& A = c.dims(a);
  const auto& B = c.dims(a + 1);
  const std::size_t rank = batched ? 3 : 2;
  if (A.size() != rank || B.size() != rank) {
    why = "operand shapes not recorded as matrices";
    return std::nullopt;
  }
  const auto dt = dtype_of(c.type(a));
  if (!dt) {
    why = fmt::format("operand type {} has no GEMM model", c.type(a));
    return std::nullopt;
  }
  models::GemmProblem g;
  g.batch = batched ? A[0] : 1;
  g.M = A[rank - 2];
  g.K = A[rank - 1];
  g.N = B[rank - 1];
  g.dtype = *dt;
  g.bias = n == "aten::addmm" && c.dims(0).size() == 1;
  // A transposed view is stored with its columns contiguous: its leading dimension is the other
  // stride (the profiler records strides since PyTorch 2.1).
  const auto leading = [&](std::size_t i) -> std::int64_t {
    if (i >= c.op.strides.size() || c.op.strides[i].size() != rank) return 0;
    const auto& st = c.op.strides[i];
    const std::int64_t rows = st[rank - 2], cols = st[rank - 1];
    return cols == 1 ? rows : rows == 1 ? cols : 0;
  };
  g.lda = leading(a);
  g.ldb = leading(a + 1);
  g.a = activation(A, c.type(a));
  g.b = c.tag + ".b";
  std::vector<std::int64_t> out(A.begin(), A.end() - 1);
  out.push_back(g.N);
  g.c = activation(out, c.type(a));
  if (g.bias) g.bias_name = c.tag + ".bias";
  return models::lower_gemm(g, c.hw, "");
}

// The query's and key's shapes ([B, H, S, D], [B, Hkv, L, D]) and type of an attention op whose
// query is input `at` (the key the next); false with `why` set when not recorded so.
struct QueryKey {
  std::vector<std::int64_t> q, k;
  DType dtype = DType::kBf16;
};
std::optional<QueryKey> query_key(const Context& c, std::size_t at, std::string& why) {
  const auto dt = dtype_of(c.type(at));
  if (c.dims(at).size() != 4 || c.dims(at + 1).size() != 4 || !dt) {
    why = "query and key shapes not recorded as [B, H, S, D]";
    return std::nullopt;
  }
  return QueryKey{c.dims(at), c.dims(at + 1), *dt};
}

// cuDNN's (or FlashAttention's) fused attention: q [B, H, S, D], k and v [B, Hkv, L, D].
std::optional<std::vector<Launch>> attention_rule(const Context& c, std::string& why) {
  const auto qk = query_key(c, 0, why);
  if (!qk) return std::nullopt;
  const auto& q = qk->q;
  const auto& k = qk->k;
  const auto dt = qk->dtype;
  // _cudnn_attention_forward(q, k, v, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k,
  // compute_log_sumexp, dropout_p, is_causal, return_debug_mask, scale).
  // Without recorded arguments (Nsight Systems): causal when queries and keys are as many, as in a
  // decoder's prefill.
  const bool causal = c.scalars_recorded ? c.concrete(10) == "True" : q[2] == k[2];
  const bool bias = !c.dims(3).empty();
  if (q[2] == 1 && k[2] > 1) {
    return c.models.lower(models::Op(models::OpKind::kSdpaDecode, dt, models::SdpaDecodeShape{q[0], q[1], k[1], k[2], q[3]}),
                          c.hw, c.tag);
  }
  if (q[1] != k[1] && !contains(c.op.name, "cudnn")) {
    why = "grouped-query attention outside cuDNN's kernels";
    return std::nullopt;
  }
  return c.models.lower(models::Op(models::OpKind::kSdpa, dt, models::SdpaShape{q[0], q[1], q[2], q[3], causal && !bias, 0, bias}),
                        c.hw, c.tag);
}

// _cudnn_attention_backward(grad_out, q, k, v, out, logsumexp, ..., is_causal (14), scale).
std::optional<std::vector<Launch>> attention_backward_rule(const Context& c, std::string& why) {
  const auto qk = query_key(c, 1, why);
  if (!qk) return std::nullopt;
  const auto& q = qk->q;
  const auto& k = qk->k;
  const auto dt = qk->dtype;
  const bool causal = c.scalars_recorded ? c.concrete(14) == "True" : q[2] == k[2];
  const double e = models::detail::elt_bytes(dt);
  const double qb = e * static_cast<double>(numel(q)), kb = e * static_cast<double>(numel(k));
  return models::lower_sdpa_backward(q[0], q[1], k[1], q[2], q[3], causal, dt, c.tensor("q", qb), c.tensor("k", kb),
                                     c.tensor("v", kb), c.tensor("o", qb), c.tensor("do", qb), c.tensor("dq", qb),
                                     c.tensor("dk", kb), c.tensor("dv", kb), c.hw);
}

// Elementwise ops by name (TensorIterator kernels): the function, whether the op takes a
// second tensor operand.
std::optional<EwFunc> elementwise_func(const std::string& name, bool two_tensors) {
  static const std::map<std::string, EwFunc> kFuncs{
      {"aten::add", EwFunc::kAdd},       {"aten::add_", EwFunc::kAdd},        {"aten::sub", EwFunc::kAdd},
      {"aten::sub_", EwFunc::kAdd},      {"aten::rsub", EwFunc::kAdd},        {"aten::mul", EwFunc::kMul},
      {"aten::mul_", EwFunc::kMul},      {"aten::div", EwFunc::kDiv},         {"aten::div_", EwFunc::kDiv},
      {"aten::neg", EwFunc::kNeg},       {"aten::pow", EwFunc::kPowScalar},   {"aten::rsqrt", EwFunc::kRsqrt},
      {"aten::sqrt", EwFunc::kSqrt},     {"aten::exp", EwFunc::kExp},         {"aten::log", EwFunc::kLog},
      {"aten::silu", EwFunc::kSilu},     {"aten::gelu", EwFunc::kGelu},       {"aten::sigmoid", EwFunc::kSigmoid},
      {"aten::tanh", EwFunc::kTanh},     {"aten::cos", EwFunc::kCos},         {"aten::sin", EwFunc::kSin},
      {"aten::copy_", EwFunc::kCopy},    {"aten::fill_", EwFunc::kFill},      {"aten::zero_", EwFunc::kFill},
      {"aten::where", EwFunc::kWhere},   {"aten::masked_fill_", EwFunc::kMaskedFill},
      {"aten::clamp", EwFunc::kClamp},   {"aten::abs", EwFunc::kAbs},         {"aten::eq", EwFunc::kEq},
      {"aten::ne", EwFunc::kEq},         {"aten::ge", EwFunc::kCompareScalar}, {"aten::gt", EwFunc::kCompareScalar},
      {"aten::lt", EwFunc::kCompareScalar}, {"aten::le", EwFunc::kCompareScalar},
      {"aten::silu_backward", EwFunc::kSiluBackward}, {"aten::sigmoid_backward", EwFunc::kSigmoidBackward},
      {"aten::tanh_backward", EwFunc::kTanhBackward}};
  const auto it = kFuncs.find(name);
  if (it == kFuncs.end()) return std::nullopt;
  if (it->second == EwFunc::kMul && !two_tensors) return EwFunc::kMulScalar;
  if (it->second == EwFunc::kAdd && !two_tensors) return EwFunc::kAddScalar;
  return it->second;
}

std::optional<std::vector<Launch>> elementwise_rule(const Context& c, std::string& why) {
  if (!c.kernel_named("elementwise_kernel")) {
    why = "its kernel is not a TensorIterator elementwise kernel";
    return std::nullopt;
  }
  // The tensor inputs: those with dims (a 0-dim tensor counts as a scalar operand).
  std::vector<std::size_t> tensors;
  std::int64_t n = 0;
  for (std::size_t i = 0; i < c.op.dims.size(); ++i) {
    if (c.dims(i).empty() || c.type(i).empty() || c.type(i) == "Scalar") continue;
    tensors.push_back(i);
    n = std::max(n, numel(c.dims(i)));
  }
  if (tensors.empty() || n <= 0) {
    why = "no tensor operand recorded";
    return std::nullopt;
  }
  const auto f = elementwise_func(c.op.name, tensors.size() >= 2);
  if (!f) {
    why = "no elementwise rule for this op";
    return std::nullopt;
  }
  models::ElementwiseProblem p;
  p.func = *f;
  p.n = n;
  // copy_(self, src): src's type in, self's out; otherwise the first operand's for both (bools
  // and integers as their byte widths' nearest float type).
  const auto as_float = [](const std::string& t) {
    if (const auto d = dtype_of(t)) return *d;
    return type_bytes(t) <= 2 ? DType::kBf16 : DType::kFp32;
  };
  const std::size_t first = tensors.front();
  p.out = as_float(c.type(first));
  p.in = *f == EwFunc::kCopy && tensors.size() >= 2 ? as_float(c.type(tensors[1])) : p.out;
  if (*f == EwFunc::kCopy && p.in != p.out) p.func = EwFunc::kCast;
  if (*f == EwFunc::kFill) p.in = p.out;
  // The legacy kernel (elementwise_kernel<...>) runs strided or broadcast operands.
  p.strided = c.kernel_named("void at::native::elementwise_kernel<") && !c.kernel_named("vectorized");
  // Full-size operands are streamed; a broadcast one (a row of scales, a bias) is read from
  // cache and not counted.
  std::size_t widest = first;
  for (std::size_t i : tensors) {
    if (numel(c.dims(i)) == n && numel(c.dims(widest)) != n) widest = i;
    const bool written = i == first && (*f == EwFunc::kCopy || *f == EwFunc::kCast || *f == EwFunc::kFill ||
                                         c.op.name.back() == '_');
    if (*f != EwFunc::kFill && numel(c.dims(i)) == n && !(written && (*f == EwFunc::kCopy || *f == EwFunc::kCast))) {
      p.inputs.push_back(activation(c.dims(i), c.type(i)));
    }
  }
  if (p.inputs.empty() && *f != EwFunc::kFill) p.inputs.push_back(c.tag + ".in");
  p.output = activation(c.dims(widest), c.type(first));
  if (c.kernel_named("unrolled_elementwise_kernel") && p.func != EwFunc::kCast) {
    for (std::size_t i = 0; i < p.inputs.size(); ++i) p.input_types.push_back(i == 0 ? DType::kFp32 : p.out);
  }
  return models::lower_elementwise(p, c.hw, "");
}

// torch.cat of a tensor list along a dim: CatArrayBatchedCopy.
std::optional<std::vector<Launch>> cat_rule(const Context& c, std::string& why) {
  // Without recorded arguments (NVTX) the list comes flattened: its tensors are the entries with
  // dims (the dim argument records none).
  std::vector<std::vector<std::int64_t>> flattened;
  if (!c.scalars_recorded) {
    for (const auto& d : c.op.dims) {
      if (!d.empty()) flattened.push_back(d);
    }
  }
  const bool listed = !c.op.list_dims.empty() && !c.op.list_dims[0].empty();
  if (!listed && flattened.empty()) {
    why = "the concatenated tensors' shapes were not recorded";
    return std::nullopt;
  }
  const auto& ts = listed ? c.op.list_dims[0] : flattened;
  std::vector<std::int64_t> elems;
  std::vector<TensorUse> ins;
  double bytes = 0;
  // The list's type is "TensorList": the kernel's template argument names it (its vectorized
  // variant moves opaque words, not elements), else an earlier op's tensor of the same shape.
  std::string type;
  if (c.kernel_named("c10::BFloat16")) type = "c10::BFloat16";
  else if (c.kernel_named("c10::Half")) type = "c10::Half";
  else if (c.kernel_named("CatArrayBatchedCopy<float")) type = "float";
  for (std::size_t i = 0; type.empty() && c.seen && i < ts.size(); ++i) {
    if (const auto it = c.seen->find(ts[i]); it != c.seen->end()) type = it->second;
  }
  if (type.empty()) type = "c10::BFloat16";  // model code's activations
  const double e = type_bytes(type);
  std::vector<std::int64_t> out = ts.front();
  for (std::size_t i = 0; i < ts.size(); ++i) {
    elems.push_back(numel(ts[i]));
    ins.push_back(TensorUse{activation(ts[i], type), static_cast<std::int64_t>(e * static_cast<double>(elems.back()))});
    bytes += e * static_cast<double>(elems.back());
  }
  // The output: the inputs' shape with the catted dim summed (the last dim here; its name only).
  if (!out.empty() && out.back() > 0) {
    out.back() = static_cast<std::int64_t>(bytes / e) / std::max<std::int64_t>(1, numel(out) / out.back());
  }
  const DType dt = dtype_of(type).value_or(e == 2 ? DType::kBf16 : DType::kFp32);
  return std::vector<Launch>{models::lower_cat(elems, dt, c.kernel_named("vectorized"), ins,
                                               TensorUse{activation(out, type), static_cast<std::int64_t>(bytes)}, c.hw)};
}

// sum / mean / amax over listed dims (reduce_kernel): the reduced extent and the outputs.
std::optional<std::vector<Launch>> reduce_rule(const Context& c, std::string& why) {
  const auto& x = c.dims(0);
  const auto dt = dtype_of(c.type(0));
  std::string dims = c.concrete(1);
  if (x.empty() || !dt || dims.size() < 2 || dims.front() != '[') {
    why = "the reduced dims were not recorded";
    return std::nullopt;
  }
  std::set<std::int64_t> reduced_dims;
  for (std::size_t i = 1; i < dims.size();) {
    std::size_t used = 0;
    try {
      reduced_dims.insert(std::stoll(dims.substr(i), &used));
    } catch (const std::exception&) {
      break;
    }
    i += used;
    while (i < dims.size() && (dims[i] == ',' || dims[i] == ' ')) ++i;
    if (i < dims.size() && dims[i] == ']') break;
  }
  const auto rank = static_cast<std::int64_t>(x.size());
  std::int64_t reduced = 1;
  bool inner = false;
  for (std::int64_t d : reduced_dims) {
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) {
      why = "a reduced dim out of range";
      return std::nullopt;
    }
    reduced *= x[static_cast<std::size_t>(d)];
    inner = inner || d == rank - 1;
  }
  if (reduced_dims.empty()) {
    why = "the reduced dims were not recorded";
    return std::nullopt;
  }
  const std::int64_t outputs = numel(x) / std::max<std::int64_t>(1, reduced);
  // Summing the leading dims away (a bias's or norm weight's gradient): the column sum.
  bool leading = true;
  for (std::size_t i = 0; i < reduced_dims.size(); ++i) {
    std::int64_t d = *std::next(reduced_dims.begin(), static_cast<std::ptrdiff_t>(i));
    if (d < 0) d += rank;
    leading = leading && d == static_cast<std::int64_t>(i);
  }
  if (leading && !inner && c.op.name == "aten::sum") {
    const double e = models::detail::elt_bytes(*dt);
    return models::lower_column_sum(reduced, outputs, *dt, *dt,
                                    TensorUse{activation(x, c.type(0)), static_cast<std::int64_t>(e * static_cast<double>(numel(x)))},
                                    c.tensor("out", e * static_cast<double>(outputs)), c.hw);
  }
  const std::string functor = c.op.name == "aten::mean" ? "MeanOps<float, float, float, float>"
                              : c.op.name == "aten::amax" ? "MaxOps<float>"
                                                          : "func_wrapper_t<float, at::native::sum_functor<float, float, float> >";
  const double e = models::detail::elt_bytes(*dt);
  return std::vector<Launch>{models::lower_reduce(
      outputs, reduced, *dt, *dt, inner, functor,
      TensorUse{activation(x, c.type(0)), static_cast<std::int64_t>(e * static_cast<double>(numel(x)))},
      TensorUse{activation({outputs}, c.type(0)), static_cast<std::int64_t>(e * static_cast<double>(outputs))}, c.hw)};
}

// Softmax and log_softmax over the last dim, and their backward.
std::optional<std::vector<Launch>> softmax_rule(const Context& c, std::string& why) {
  const auto& x = c.dims(0);
  const auto dt = dtype_of(c.type(0));
  if (x.empty() || !dt) {
    why = "the input's shape was not recorded";
    return std::nullopt;
  }
  const std::int64_t C = x.back(), R = numel(x) / std::max<std::int64_t>(1, C);
  const double bytes = models::detail::elt_bytes(*dt) * static_cast<double>(numel(x));
  const std::string& n = c.op.name;
  const std::string act = activation(x, c.type(0));
  const auto b = static_cast<std::int64_t>(bytes);
  if (n == "aten::_softmax") return models::lower_softmax(R, C, *dt, act, c.tag + ".out", c.hw, "");
  if (n == "aten::_log_softmax") return models::lower_log_softmax(R, C, *dt, TensorUse{act, b}, c.tensor("out", bytes), c.hw);
  const TensorUse go{act, b}, out = c.tensor("out", bytes), gi = c.tensor("grad_in", bytes);
  if (n == "aten::_log_softmax_backward_data") return models::lower_log_softmax_backward(R, C, *dt, go, out, gi, c.hw);
  return models::lower_softmax_backward(R, C, *dt, go, out, gi, c.hw);
}

std::optional<std::vector<Launch>> memory_rule(const Context& c, std::string& why) {
  std::vector<Launch> out;
  for (const RecordedActivity* a : c.acts) {
    if (a->kind == ActivityKind::kMemset) {
      out.push_back(models::detail::memset_launch(c.tag, "memset", a->bytes));
    } else if (a->kind == ActivityKind::kMemcpy) {
      const double b = static_cast<double>(a->bytes);
      out.push_back(models::detail::memcpy_launch(!contains(a->name, "DtoD"), b, c.tensor("src", b), c.tensor("dst", b), c.hw));
    } else {
      why = "a kernel among its copies";
      return std::nullopt;
    }
  }
  return out;
}

// torch._foreach_* and _fused_adamw_: the profiler records no tensor list shapes, but each
// multi_tensor_apply launch's grid is its chunks (65,536 elements a CTA): each recorded launch is
// lowered as one of that many chunks, with the op's lists (its TensorList operands).
std::optional<std::vector<Launch>> foreach_rule(const Context& c, std::string& why) {
  constexpr std::int64_t kChunk = 65536;
  const auto lists = static_cast<int>(std::count(c.op.types.begin(), c.op.types.end(), std::string("TensorList")));
  if (lists == 0) {
    why = "no tensor list among its operands";
    return std::nullopt;
  }
  std::vector<Launch> out;
  for (const RecordedActivity* a : c.acts) {
    if (!contains(a->name, "multi_tensor_apply_kernel")) {
      why = "a kernel other than multi_tensor_apply";
      return std::nullopt;
    }
    const DType dt = contains(a->name, "BFloat16") ? DType::kBf16 : contains(a->name, "Half") ? DType::kFp16 : DType::kFp32;
    const std::vector<std::int64_t> elems{std::max<std::int64_t>(1, a->grid.x) * kChunk};
    std::vector<std::vector<TensorUse>> ls;
    for (int l = 0; l < std::max(lists, c.op.name == "aten::_fused_adamw_" ? 4 : 1); ++l) {
      ls.push_back({c.tensor(fmt::format("list{}", l), models::detail::elt_bytes(dt) * static_cast<double>(elems[0]))});
    }
    std::vector<Launch> l;
    if (c.op.name == "aten::_fused_adamw_") {
      ls.resize(4);
      l = models::lower_fused_adamw(elems, dt, dt, ls, c.hw);
    } else {
      l = models::lower_multi_tensor_apply(elems, dt, ls, 1, c.op.name, static_cast<double>(lists), c.hw);
    }
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

// nn.LayerNorm (native_layer_norm: x [..., C], weight, bias).
std::optional<std::vector<Launch>> layer_norm_rule(const Context& c, std::string& why) {
  const auto& x = c.dims(0);
  const auto dt = dtype_of(c.type(0));
  if (x.empty() || !dt) {
    why = "the input's shape was not recorded";
    return std::nullopt;
  }
  const std::int64_t C = x.back(), R = numel(x) / std::max<std::int64_t>(1, C);
  return c.models.lower(models::Op(models::OpKind::kLayerNorm, *dt, models::RowShape{R, C}), c.hw, c.tag);
}

// native_layer_norm_backward(grad_y, x, normalized_shape, mean, rstd, weight, bias, mask): the
// input's gradient, then gamma's and beta's.
std::optional<std::vector<Launch>> layer_norm_backward_rule(const Context& c, std::string& why) {
  const auto& x = c.dims(1);
  const auto dt = dtype_of(c.type(1));
  if (x.empty() || c.dims(0) != x || !dt) {
    why = "the input's and its gradient's shapes were not recorded";
    return std::nullopt;
  }
  const std::int64_t C = x.back(), R = numel(x) / std::max<std::int64_t>(1, C);
  const double e = models::detail::elt_bytes(*dt), bytes = e * static_cast<double>(numel(x));
  const auto b = static_cast<std::int64_t>(bytes);
  return models::lower_layer_norm_backward(R, C, *dt, TensorUse{activation(x, c.type(1)), b},
                                           c.tensor("weight", e * static_cast<double>(C)), c.tensor("grad_y", bytes),
                                           c.tensor("grad_x", bytes), c.tensor("grad_weight", e * static_cast<double>(C)),
                                           c.tensor("grad_bias", e * static_cast<double>(C)), c.hw);
}

// native_dropout(x, p, train): the output and a bool mask; native_dropout_backward(grad, mask,
// scale): grad * mask * scale. Attention's dropout belongs to the attention rules.
std::optional<std::vector<Launch>> dropout_rule(const Context& c, std::string& why) {
  const auto& x = c.dims(0);
  const auto dt = dtype_of(c.type(0));
  if (x.empty() || !dt) {
    why = "the input's shape was not recorded";
    return std::nullopt;
  }
  const std::int64_t n = numel(x);
  const double e = models::detail::elt_bytes(*dt);
  const auto bytes = static_cast<std::int64_t>(e * static_cast<double>(n));
  if (c.op.name == "aten::native_dropout") {
    return std::vector<Launch>{models::lower_dropout(n, *dt, TensorUse{activation(x, c.type(0)), bytes},
                                                     c.tensor("out", static_cast<double>(bytes)),
                                                     c.tensor("mask", static_cast<double>(n)), c.hw)};
  }
  models::ElementwiseProblem p;
  p.func = EwFunc::kMaskedScale;
  p.n = n;
  p.in = p.out = *dt;
  p.inputs = {activation(x, c.type(0)), c.tag + ".mask"};
  p.output = c.tag + ".grad_in";
  return models::lower_elementwise(p, c.hw, "");
}

// index_select(table, 0, ids): the embedding lookup; index(x, [ids]): a row gather.
std::optional<std::vector<Launch>> gather_rule(const Context& c, std::string& why) {
  const auto& table = c.dims(0);
  const auto dt = dtype_of(c.type(0));
  if (table.size() != 2 || !dt) {
    why = "the gathered tensor is not a recorded matrix";
    return std::nullopt;
  }
  const double e = models::detail::elt_bytes(*dt);
  const TensorUse in{activation(table, c.type(0)), static_cast<std::int64_t>(e * static_cast<double>(numel(table)))};
  if (c.op.name == "aten::index_select") {
    const std::int64_t rows = numel(c.dims(2));
    return std::vector<Launch>{models::lower_embedding_lookup(rows, table[1], *dt, in,
                                                              c.tensor("out", e * static_cast<double>(rows * table[1])), c.hw)};
  }
  // aten::index with a list of index tensors (not recorded): as many rows as the first dim.
  const std::int64_t rows = table[0];
  return std::vector<Launch>{models::lower_row_gather(rows, e * static_cast<double>(table[1]), in,
                                                      c.tensor("out", e * static_cast<double>(numel(table))), c.hw)};
}

// torch._grouped_mm(a [S, K], b [E, K, N], offs [E]): the routed tokens' GEMMs. The offsets'
// values are not recorded: the S rows are taken as evenly spread over the E experts.
std::optional<std::vector<Launch>> grouped_gemm_rule(const Context& c, std::string& why) {
  const auto& a = c.dims(0);
  const auto& b = c.dims(1);
  const auto dt = dtype_of(c.type(0));
  if (a.size() != 2 || b.size() != 3 || !dt) {
    why = "operands not recorded as [S, K] and [E, K, N]";
    return std::nullopt;
  }
  const std::int64_t S = a[0], E = b[0], K = b[1], N = b[2];
  std::vector<std::int64_t> rows(static_cast<std::size_t>(E), S / std::max<std::int64_t>(1, E));
  for (std::int64_t i = 0; i < S % E; ++i) rows[static_cast<std::size_t>(i)] += 1;
  const double e = models::detail::elt_bytes(*dt);
  return models::lower_grouped_gemm(rows, N, K, *dt, TensorUse{activation(a, c.type(0)), static_cast<std::int64_t>(e * static_cast<double>(S * K))},
                                    c.tensor("w", e * static_cast<double>(E * K * N)),
                                    TensorUse{activation({S, N}, c.type(0)), static_cast<std::int64_t>(e * static_cast<double>(S * N))},
                                    c.hw);
}

// MoE routing bookkeeping: topk, sort, histc, cumsum, arange.
std::optional<std::vector<Launch>> routing_rule(const Context& c, std::string& why) {
  const std::string& n = c.op.name;
  const auto& x = c.dims(0);
  const TensorUse in = c.tensor("in", 8.0 * static_cast<double>(std::max<std::int64_t>(1, numel(x))));
  const TensorUse out = c.tensor("out", 8.0 * static_cast<double>(std::max<std::int64_t>(1, numel(x))));
  if (n == "aten::topk" && x.size() == 2) {
    std::int64_t k = 0;
    try {
      k = std::stoll(c.concrete(1));
    } catch (const std::exception&) {
      why = "k was not recorded";
      return std::nullopt;
    }
    return models::lower_topk(x[0], x[1], k, in, out, c.hw);
  }
  if (n == "aten::sort" && x.size() == 1) return models::lower_sort(x[0], in, c.hw);
  if (n == "aten::histc" && x.size() == 1) {
    std::int64_t bins = 100;
    try {
      bins = std::stoll(c.concrete(1));
    } catch (const std::exception&) {
    }
    return std::vector<Launch>{models::lower_histogram(x[0], bins, in, out, c.hw)};
  }
  if (n == "aten::cumsum" && x.size() == 1) return models::lower_cumsum(x[0], in, out, c.hw);
  if (n == "aten::arange") {
    try {
      const std::int64_t end = std::stoll(c.concrete(0));
      return std::vector<Launch>{models::lower_arange(std::max<std::int64_t>(1, end), out, c.hw)};
    } catch (const std::exception&) {
    }
  }
  why = "its shape or arguments were not recorded as the rule needs";
  return std::nullopt;
}

// The loss and the embedding's backward of a training step.
std::optional<std::vector<Launch>> loss_rule(const Context& c, std::string& why) {
  const std::string& n = c.op.name;
  if (n == "aten::embedding_dense_backward") {
    const auto& g = c.dims(0);
    const auto dt = dtype_of(c.type(0));
    std::int64_t V = 0;
    try {
      V = std::stoll(c.concrete(2));
    } catch (const std::exception&) {
    }
    if (g.empty() || !dt || V <= 0) {
      why = "the gradient's shape or the table size was not recorded";
      return std::nullopt;
    }
    const std::int64_t d = g.back(), T = numel(g) / std::max<std::int64_t>(1, d);
    const double e = models::detail::elt_bytes(*dt);
    return models::lower_embedding_backward(T, V, d, *dt, c.tensor("ids", 8.0 * static_cast<double>(T)),
                                            TensorUse{activation(g, c.type(0)), static_cast<std::int64_t>(e * static_cast<double>(numel(g)))},
                                            c.tensor("table", e * static_cast<double>(V * d)), c.hw);
  }
  // nll_loss_forward(logp [R, C], target [R], ...); nll_loss_backward(grad, logp [R, C], target, ...).
  const std::size_t x = n == "aten::nll_loss_forward" ? 0 : 1;
  const auto& lp = c.dims(x);
  if (lp.size() != 2) {
    why = "the log-probabilities' shape was not recorded";
    return std::nullopt;
  }
  const TensorUse target = c.tensor("target", 8.0 * static_cast<double>(lp[0]));
  if (n == "aten::nll_loss_forward") {
    return std::vector<Launch>{models::lower_nll_loss_forward(lp[0], lp[1], c.tensor("logp", 4.0 * static_cast<double>(numel(lp))),
                                                              target, c.tensor("loss", 4), c.hw)};
  }
  return std::vector<Launch>{models::lower_nll_loss_backward(lp[0], lp[1], target,
                                                             c.tensor("grad", 4.0 * static_cast<double>(numel(lp))), c.hw)};
}

struct RuleEntry {
  const char* family;
  Rule rule;
};

// The rule for an op name (nullptr: none).
const RuleEntry* rule_for(const std::string& op) {
  static const RuleEntry kGemm{"gemm", gemm_rule}, kAttn{"attention", attention_rule},
      kAttnBwd{"attention_backward", attention_backward_rule}, kEw{"elementwise", elementwise_rule},
      kCat{"cat", cat_rule}, kReduce{"reduce", reduce_rule}, kSoftmax{"softmax", softmax_rule},
      kForeach{"foreach", foreach_rule}, kLayerNorm{"norm", layer_norm_rule},
      kLayerNormBackward{"norm_backward", layer_norm_backward_rule}, kDropout{"dropout", dropout_rule}, kGather{"gather", gather_rule},
      kGrouped{"grouped_gemm", grouped_gemm_rule}, kRouting{"routing", routing_rule}, kLoss{"loss", loss_rule};
  static const std::map<std::string, const RuleEntry*> kRules{
      {"aten::mm", &kGemm},
      {"aten::addmm", &kGemm},
      {"aten::bmm", &kGemm},
      {"aten::baddbmm", &kGemm},
      {"aten::_cudnn_attention_forward", &kAttn},
      {"aten::_scaled_dot_product_cudnn_attention", &kAttn},
      {"aten::_cudnn_attention_backward", &kAttnBwd},
      {"aten::_scaled_dot_product_cudnn_attention_backward", &kAttnBwd},
      {"aten::cat", &kCat},
      {"aten::sum", &kReduce},
      {"aten::mean", &kReduce},
      {"aten::amax", &kReduce},
      {"aten::_softmax", &kSoftmax},
      {"aten::_log_softmax", &kSoftmax},
      {"aten::_softmax_backward_data", &kSoftmax},
      {"aten::_log_softmax_backward_data", &kSoftmax},
      {"aten::native_layer_norm", &kLayerNorm},
      {"aten::native_layer_norm_backward", &kLayerNormBackward},
      {"aten::native_dropout", &kDropout},
      {"aten::native_dropout_backward", &kDropout},
      {"aten::index_select", &kGather},
      {"aten::index", &kGather},
      {"aten::_grouped_mm", &kGrouped},
      {"aten::topk", &kRouting},
      {"aten::sort", &kRouting},
      {"aten::histc", &kRouting},
      {"aten::cumsum", &kRouting},
      {"aten::arange", &kRouting},
      {"aten::embedding_dense_backward", &kLoss},
      {"aten::nll_loss_forward", &kLoss},
      {"aten::nll_loss_backward", &kLoss}};
  if (const auto it = kRules.find(op); it != kRules.end()) return it->second;
  if (op.rfind("aten::_foreach_", 0) == 0 || op == "aten::_fused_adamw_") return &kForeach;
  if (elementwise_func(op, true)) return &kEw;
  return nullptr;
}

bool gemm_like(const std::string& name) {
  for (const char* p : {"gemm", "nvjet", "xmma", "cutlass", "conv", "wgrad", "dgrad", "implicit"}) {
    if (contains(name, p)) return true;
  }
  return false;
}

}  // namespace

double carry_scale(const std::string& kernel_name, const hw::HardwareSpec* from, const hw::HardwareSpec& to) {
  if (from == nullptr || from->name == to.name) return 1.0;
  if (gemm_like(kernel_name)) {
    const double a = from->peak_tensor_flops(DType::kBf16), b = to.peak_tensor_flops(DType::kBf16);
    if (a > 0 && b > 0) return a / b;
  }
  const double a = from->dram.achievable_bandwidth(), b = to.dram.achievable_bandwidth();
  return a > 0 && b > 0 ? a / b : 1.0;
}

namespace {

// A carried-over launch: one CTA of the recorded block whose work is a fixed time.
Launch carried_launch(const RecordedActivity& a, double us) {
  Launch l;
  l.name = a.name;
  l.family = "carried";
  l.grid = {1, 1, 1};
  l.block = a.block.count() > 0 ? a.block : hw::Dim3{128, 1, 1};
  l.regs_per_thread = a.regs;
  hw::CtaWork w;
  w.fixed = sim::Time::from_seconds(std::max(0.0, us) * 1e-6);
  models::detail::add_class(l, 1, w);
  return l;
}

// What the engine adds to any kernel's span (its dispatch and drain): taken off a carried
// kernel's fixed time so that its simulated duration is the scaled recorded one.
double engine_floor_us(const hw::HardwareSpec& hw) {
  RecordedActivity none;
  const auto r = hw::run_engine(hw, hw::LaunchMode::kGraph, {hw::KernelNode{carried_launch(none, 0), "floor", 0, {}, std::nullopt}});
  return r.kernels.empty() ? 0.0 : r.kernels.front().duration().us();
}

}  // namespace

std::vector<MappedGroup> map_trace(const RecordedTrace& trace, const hw::HardwareSpec& to, const hw::HardwareSpec* from,
                                   const models::KernelModelRegistry& models) {
  const double floor_us = engine_floor_us(to);
  TypesByShape seen;
  std::vector<MappedGroup> groups;
  const auto& acts = trace.activities;
  for (std::size_t i = 0; i < acts.size();) {
    // The op instance: consecutive activities of this op on this stream.
    std::size_t j = i + 1;
    while (j < acts.size() && acts[i].op && acts[j].op == acts[i].op && acts[j].stream == acts[i].stream) ++j;
    MappedGroup g;
    g.stream = acts[i].stream;
    std::vector<const RecordedActivity*> mine;
    for (std::size_t k = i; k < j; ++k) {
      g.activities.push_back(k);
      g.recorded_us += acts[k].duration_us;
      mine.push_back(&acts[k]);
    }
    const bool memory_only = std::all_of(mine.begin(), mine.end(), [](const RecordedActivity* a) { return a->kind != ActivityKind::kKernel; });
    g.op = acts[i].op ? trace.ops[*acts[i].op].name : acts[i].name;
    const std::string tag = fmt::format("r{}", i);
    if (acts[i].op) {
      const RecordedOp& op = trace.ops[*acts[i].op];
      const Context c{op, mine, to, models, tag, &seen, trace.scalars_recorded};
      const RuleEntry* r = memory_only ? nullptr : rule_for(op.name);
      std::optional<std::vector<Launch>> launches;
      if (memory_only) {
        g.family = mine.front()->kind == ActivityKind::kMemset ? "memset" : "memcpy";
        launches = memory_rule(c, g.why);
      } else if (r) {
        g.family = r->family;
        try {
          launches = r->rule(c, g.why);
        } catch (const ModelError& e) {
          g.why = e.what();
        }
      } else {
        g.why = "no rule for this op";
      }
      if (launches) {
        g.mapped = true;
        g.launches = std::move(*launches);
      }
      for (std::size_t k = 0; k < op.dims.size() && k < op.types.size(); ++k) {
        if (!op.dims[k].empty() && dtype_of(op.types[k])) seen[op.dims[k]] = op.types[k];
      }
    } else if (memory_only) {
      const RecordedOp none{};
      const Context c{none, mine, to, models, tag};
      g.family = mine.front()->kind == ActivityKind::kMemset ? "memset" : "memcpy";
      if (auto l = memory_rule(c, g.why)) {
        g.mapped = true;
        g.launches = std::move(*l);
      }
    } else {
      g.why = "launched outside any recorded op";
    }
    if (!g.mapped) {
      // Carried over: each recorded activity as a launch of its recorded shape whose CTAs take
      // the scaled recorded duration.
      g.family = "unmapped";
      for (const RecordedActivity* a : mine) {
        g.launches.push_back(carried_launch(*a, a->duration_us * carry_scale(a->name, from, to) - floor_us));
      }
    }
    groups.push_back(std::move(g));
    i = j;
  }
  return groups;
}

}  // namespace gpusim::replay
