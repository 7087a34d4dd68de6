// The `rope` op: rotary embedding as PyTorch model code writes it (Llama's apply_rotary_pos_emb,
// validation/measure/tp_steps.py's rope): x*cos + cat(-x[..., D/2:], x[..., :D/2])*sin, five
// ATen kernels. x is q or k viewed [B, H, S, D] over a projection's [B, S, H, D] memory; cos and
// sin are [S, D] tables broadcast over batch and heads. The same decomposition as the hf-eager
// lowering's RoPE (workloads/hf_eager_lowering.cpp), whose kernels hf_models_h100.json.gz checked.
#include <fmt/format.h>

#include "models/common.h"
#include "models/families.h"
#include "sim/error.h"

namespace gpusim::models {

std::vector<Launch> RopeModel::lower(const Op& op, const hw::HardwareSpec& hw, const std::string& tag) const {
  const auto& s = op.as<RopeShape>();
  if (s.D % 2 != 0) throw ModelError(fmt::format("rope: D ({}) must be even", s.D));
  const hw::DType d = op.dtype() == hw::DType::kTf32 ? hw::DType::kFp32 : op.dtype();
  const std::int64_t n = s.B * s.S * s.H * s.D;
  // A broadcast table (or, with several heads, the transposed view) defeats vectorization.
  const bool broadcast = s.H > 1 || s.B > 1;
  // With several tokens and heads, x*cos keeps x's [B, S, H, D] layout while the cat's product
  // is [B, H, S, D]: the sum of two differently laid-out tensors is strided.
  const bool strided_sum = s.S > 1 && s.H > 1;
  const auto ew = [&](EwFunc f, std::int64_t count, std::vector<std::string> in, std::string out, bool strided) {
    ElementwiseProblem p;
    p.func = f;
    p.n = count;
    p.in = p.out = d;
    p.inputs = std::move(in);
    p.output = std::move(out);
    p.strided = strided;
    return lower_elementwise(p, hw, tag);
  };
  std::vector<Launch> out;
  const auto append = [&out](std::vector<Launch> ls) {
    for (auto& l : ls) out.push_back(std::move(l));
  };
  const double e = detail::elt_bytes(d);
  append(ew(EwFunc::kMul, n, {"x", "cos"}, "x_cos", broadcast));
  append(ew(EwFunc::kNeg, n / 2, {"x"}, "neg", true));  // a slice of the last dimension
  out.push_back(lower_cat({n / 2, n / 2}, d, false,
                          {detail::tensor(tag, "neg", static_cast<double>(n / 2) * e),
                           detail::tensor(tag, "x", static_cast<double>(n) * e)},
                          detail::tensor(tag, "rotated", static_cast<double>(n) * e), hw));
  append(ew(EwFunc::kMul, n, {"rotated", "sin"}, "rotated_sin", broadcast));
  append(ew(EwFunc::kAdd, n, {"x_cos", "rotated_sin"}, "out", strided_sum));
  return out;
}

}  // namespace gpusim::models
