// naive_attention: attention written out in PyTorch ops, as the measurement runs it
// (validation/measure/op_kernels.py):
//   scores = torch.matmul(q, k.transpose(-2, -1)) * scale
//   if causal: scores = scores.masked_fill(mask, -inf)     # mask: S x S bool, broadcast
//   probs  = torch.softmax(scores, dim=-1)
//   out    = torch.matmul(probs, v)
// Kernels (ops_h100.csv, fp32): a cuBLAS batched GEMM (B*H problems of S x S x D), the scale as
// a vectorized elementwise multiply by a scalar, for causal a device-to-device copy (the
// out-of-place masked_fill clones) and the masked_fill kernel, the softmax, and a second batched
// GEMM (S x D x S). Each is lowered by its own family's model; the S x S intermediates are
// named tensors so the engine's L2 model sees their traffic between kernels.
// `softmax: manual` writes the softmax out as hand-written code does (cs336_basics, seed 002's
// attention benchmark): torch.amax over the keys, the subtraction, exp, the row sums and the
// division, each a pass over the B*H x S x S scores. `pass: backward` lowers autograd's backward
// from the output's gradient instead (written from PyTorch's derivative formulas; the manual
// chain's kernels as validation/data/cs336_train_h100.json.gz lists them in the cs336 attention):
// the second matmul's two gradients (v's first), the softmax's backward (torch.softmax's one
// kernel, or the written-out ops' chain: the division's two gradients with the divisor's summed
// over each row, the sum's expanded gradient added, exp's product, the subtraction's negated row
// sums spread by amax's backward over each row's maxima and added), masked_fill's (a clone and
// a fill), the scale's, and the first matmul's two gradients (k's first).
#include <fmt/format.h>

#include "models/common.h"
#include "models/families.h"
#include "models/training_kernels.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {

// cudaMemcpyAsync device to device: n bytes read and written. The driver's copy streams over
// the whole device at DRAM speed, so it is modeled as one CTA per SM sharing the bytes (a
// single CTA would be held to one SM's share of the memory system).
Launch memcpy_d2d(const hw::HardwareSpec& hw, double bytes, const std::string& tag,
                  const std::string& from, const std::string& to) {
  Launch l;
  l.name = "Memcpy DtoD (Device -> Device)";
  l.family = "memcpy";
  l.grid = {hw.sm_count, 1, 1};
  l.block = {256, 1, 1};
  hw::CtaWork w;
  const double share = bytes / static_cast<double>(hw.sm_count);
  w.l2_bytes = 2.0 * share;
  w.dram_read_bytes = share;
  w.dram_write_bytes = share;
  detail::add_class(l, hw.sm_count, w);
  l.reads = {detail::tensor(tag, from, bytes)};
  l.writes = {detail::tensor(tag, to, bytes)};
  return l;
}

void append(std::vector<Launch>& out, std::vector<Launch> more) {
  for (auto& l : more) out.push_back(std::move(l));
}

constexpr const char* kAmaxFunctor = "at::native::func_wrapper_t<float, at::native::MaxNanFunctor<float> >";
constexpr const char* kSumFunctor =
    "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::reduce(at::TensorIterator&)::"
    "{lambda(float, float)#1}>";

// The op's lowering context: shape, storage type, tag and the launches so far.
struct Lowering {
  const NaiveAttentionShape& s;
  const hw::HardwareSpec& hw;
  const std::string& tag;
  hw::DType math, storage;
  std::vector<Launch> out;

  std::int64_t bh() const { return s.B * s.H; }
  std::int64_t n_scores() const { return bh() * s.S * s.S; }
  std::int64_t rows() const { return bh() * s.S; }
  hw::TensorUse tensor(const std::string& name, std::int64_t elems) const {
    return detail::tensor(tag, name, static_cast<double>(elems) * detail::elt_bytes(storage));
  }

  // `batch` products c[M, N] = a[M, K] @ b[K, N]; `transposed`: b is a transposed view ("tn").
  void gemm(std::int64_t M, std::int64_t N, std::int64_t K, const std::string& a, const std::string& b,
            const std::string& c, bool transposed = false) {
    GemmProblem g;
    g.M = M;
    g.N = N;
    g.K = K;
    g.batch = bh();
    g.dtype = math;
    g.a = a;
    g.b = b;
    g.c = c;
    append(out, lower_gemm(g, hw, tag, transposed));
  }
  // One elementwise kernel over the scores (`strided`: an operand broadcast over the rows).
  void pointwise(EwFunc f, const std::vector<std::string>& inputs, const std::string& output, bool strided = false,
                 std::int64_t n = 0) {
    ElementwiseProblem p;
    p.func = f;
    p.n = n > 0 ? n : n_scores();
    p.in = p.out = storage;
    p.inputs = inputs;
    p.output = output;
    p.strided = strided;
    append(out, lower_elementwise(p, hw, tag));
  }
  // A reduction over each row of the scores into one value a row.
  void reduce_rows(const char* functor, const std::string& input, const std::string& output) {
    out.push_back(lower_reduce(rows(), s.S, storage, storage, true, functor, tensor(input, n_scores()),
                               tensor(output, rows()), hw));
  }
  // masked_fill out of place: a clone, then the fill under the broadcast S x S mask.
  void masked_fill(const std::string& from, const std::string& to) {
    const double bytes = static_cast<double>(n_scores()) * detail::elt_bytes(storage);
    out.push_back(memcpy_d2d(hw, bytes, tag, from, to));
    ElementwiseProblem fill;
    fill.func = EwFunc::kMaskedFill;
    fill.n = n_scores();
    fill.in = fill.out = storage;
    fill.inputs = {to};
    fill.output = to;
    fill.mask_bytes = s.S * s.S;  // one bool per (query, key)
    append(out, lower_elementwise(fill, hw, tag));
  }
};

void forward(Lowering& x) {
  const auto& s = x.s;
  x.gemm(s.S, s.S, s.D, "q", "k", "scores", /*transposed=*/true);  // scores = q @ k^T per (batch, head)
  x.pointwise(EwFunc::kMulScalar, {"scores"}, "scaled");
  std::string probs_in = "scaled";
  if (s.causal) {
    x.masked_fill("scaled", "masked");
    probs_in = "masked";
  }
  if (s.manual_softmax) {
    x.reduce_rows(kAmaxFunctor, probs_in, "row_max");
    x.pointwise(EwFunc::kAdd, {probs_in, "row_max"}, "shifted", true);
    x.pointwise(EwFunc::kExp, {"shifted"}, "exp");
    x.reduce_rows(kSumFunctor, "exp", "row_sum");
    x.pointwise(EwFunc::kDiv, {"exp", "row_sum"}, "probs", true);
  } else {
    append(x.out, lower_softmax(x.rows(), s.S, x.storage, probs_in, "probs", x.hw, x.tag));
  }
  x.gemm(s.S, s.D, s.S, "probs", "v", "out");  // out = probs @ v
}

void backward(Lowering& x) {
  const auto& s = x.s;
  // out = probs @ v: v's gradient (probs^T dO), then the weights' (dO v^T).
  x.gemm(s.S, s.D, s.S, "probs", "grad_out", "grad_v");
  x.gemm(s.S, s.S, s.D, "grad_out", "v", "grad_probs", /*transposed=*/true);
  if (s.manual_softmax) {
    // probs = exp / sum: the divisor's gradient -grad * ((exp / sum) / sum) summed over each
    // row, and the dividend's grad / sum.
    x.pointwise(EwFunc::kDiv, {"exp", "row_sum"}, "sum_quotient", true);
    x.pointwise(EwFunc::kDiv, {"sum_quotient", "row_sum"}, "sum_quotient2", true);
    x.pointwise(EwFunc::kNeg, {"grad_probs"}, "grad_probs_neg");
    x.pointwise(EwFunc::kMul, {"grad_probs_neg", "sum_quotient2"}, "grad_sum_terms");
    x.pointwise(EwFunc::kDiv, {"grad_probs", "row_sum"}, "grad_exp_div", true);
    x.reduce_rows(kSumFunctor, "grad_sum_terms", "grad_row_sum");
    // The sum's gradient expanded over its row, added to the division's; exp's backward.
    x.pointwise(EwFunc::kAdd, {"grad_exp_div", "grad_row_sum"}, "grad_exp", true);
    x.pointwise(EwFunc::kMul, {"grad_exp", "exp"}, "grad_shifted");
    // shifted = scores - amax: the maxima's gradient negated and summed over each row, spread
    // by amax's backward over each row's maxima, added.
    x.pointwise(EwFunc::kNeg, {"grad_shifted"}, "grad_shifted_neg");
    x.reduce_rows(kSumFunctor, "grad_shifted_neg", "grad_row_max");
    const std::string scores = s.causal ? "masked" : "scaled";
    append(x.out, lower_amax_backward(x.rows(), s.S, x.storage, x.tensor(scores, x.n_scores()),
                                      x.tensor("row_max", x.rows()), x.tensor("grad_row_max", x.rows()),
                                      x.tensor("grad_max", x.n_scores()), x.hw));
    x.pointwise(EwFunc::kAdd, {"grad_shifted", "grad_max"}, "grad_scores_in");
  } else {
    append(x.out, lower_softmax_backward(x.rows(), s.S, x.storage, x.tensor("grad_probs", x.n_scores()),
                                         x.tensor("probs", x.n_scores()), x.tensor("grad_scores_in", x.n_scores()),
                                         x.hw));
  }
  std::string grad_scaled = "grad_scores_in";
  if (s.causal) {
    x.masked_fill("grad_scores_in", "grad_masked");  // grad.masked_fill(mask, 0)
    grad_scaled = "grad_masked";
  }
  x.pointwise(EwFunc::kMulScalar, {grad_scaled}, "grad_scores");
  // scores = q @ k^T: k's gradient (q^T dS, [D, S] each) first, then q's (dS k).
  x.gemm(s.D, s.S, s.S, "q", "grad_scores", "grad_k");
  x.gemm(s.S, s.D, s.S, "grad_scores", "k", "grad_q");
}

}  // namespace

std::vector<Launch> NaiveAttentionModel::lower(const Op& op, const hw::HardwareSpec& hw,
                                               const std::string& tag) const {
  const auto& s = op.as<NaiveAttentionShape>();
  if (s.B <= 0 || s.H <= 0 || s.S <= 0 || s.D <= 0) {
    throw ModelError("naive_attention: B, H, S and D must be positive");
  }
  const hw::DType d = op.dtype();
  Lowering x{s, hw, tag, d, d == hw::DType::kTf32 ? hw::DType::kFp32 : d, {}};
  if (s.backward) {
    backward(x);
  } else {
    forward(x);
  }
  return std::move(x.out);
}

}  // namespace gpusim::models
