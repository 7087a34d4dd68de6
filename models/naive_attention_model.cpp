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
#include <fmt/format.h>

#include "models/common.h"
#include "models/families.h"
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

}  // namespace

std::vector<Launch> NaiveAttentionModel::lower(const Op& op, const hw::HardwareSpec& hw,
                                               const std::string& tag) const {
  const auto& s = op.as<NaiveAttentionShape>();
  if (s.B <= 0 || s.H <= 0 || s.S <= 0 || s.D <= 0) {
    throw ModelError("naive_attention: B, H, S and D must be positive");
  }
  hw::DType d = op.dtype();
  const hw::DType storage = d == hw::DType::kTf32 ? hw::DType::kFp32 : d;
  const std::int64_t bh = s.B * s.H;
  const std::int64_t n_scores = bh * s.S * s.S;
  std::vector<Launch> out;

  GemmProblem qk;  // scores[S, S] = q[S, D] @ k^T[D, S], per (batch, head)
  qk.M = s.S;
  qk.N = s.S;
  qk.K = s.D;
  qk.batch = bh;
  qk.dtype = d;
  qk.a = "q";
  qk.b = "k";
  qk.c = "scores";
  append(out, lower_gemm(qk, hw, tag, /*linear=*/true));  // k^T: a transposed operand ("tn")

  ElementwiseProblem scale;
  scale.func = EwFunc::kMulScalar;
  scale.n = n_scores;
  scale.in = scale.out = storage;
  scale.inputs = {"scores"};
  scale.output = "scaled";
  append(out, lower_elementwise(scale, hw, tag));

  std::string probs_in = "scaled";
  if (s.causal) {
    const double bytes = static_cast<double>(n_scores) * detail::elt_bytes(storage);
    out.push_back(memcpy_d2d(hw, bytes, tag, "scaled", "masked"));
    ElementwiseProblem fill;
    fill.func = EwFunc::kMaskedFill;
    fill.n = n_scores;
    fill.in = fill.out = storage;
    fill.inputs = {"masked"};
    fill.output = "masked";
    fill.mask_bytes = s.S * s.S;  // one bool per (query, key)
    append(out, lower_elementwise(fill, hw, tag));
    probs_in = "masked";
  }

  append(out, lower_softmax(bh * s.S, s.S, storage, probs_in, "probs", hw, tag));

  GemmProblem pv;  // out[S, D] = probs[S, S] @ v[S, D]
  pv.M = s.S;
  pv.N = s.D;
  pv.K = s.S;
  pv.batch = bh;
  pv.dtype = d;
  pv.a = "probs";
  pv.b = "v";
  pv.c = "out";
  append(out, lower_gemm(pv, hw, tag));
  return out;
}

}  // namespace gpusim::models
