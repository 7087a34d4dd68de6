#include "validation/functional/functional_checks.h"

#include <cmath>
#include <fmt/format.h>

#include "models/families.h"
#include "validation/functional/activations.h"
#include "validation/functional/decode_attention.h"
#include "validation/functional/flash_attention.h"
#include "validation/functional/gemm.h"
#include "validation/functional/model_totals.h"
#include "validation/functional/moe.h"
#include "validation/functional/norms.h"
#include "validation/functional/reference.h"
#include "validation/functional/rope.h"
#include "validation/functional/softmax.h"

namespace gpusim::functional {
namespace {

constexpr double kBound = 1e-5;    // fp32 vs double, relative; every check stays below 1e-6
constexpr std::int64_t kBf16 = 2;  // the modeled storage type's bytes per element
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// One row. `flops_gap` and `bytes_gap`: what the model charges beyond the decomposition, by
// the documented relationship (0 when they must agree); FLOPs not compared when !flops_checked
// (the CUDA-core op counts of small kernels are estimates on both sides).
struct Row {
  std::string name;
  double error = 0;
  double flops_f = 0, flops_m = 0, flops_gap = 0;
  bool flops_checked = true;
  double bytes_f = 0, bytes_m = 0, bytes_gap = 0;
  std::string note;

  FunctionalCheck done() const {
    FunctionalCheck c{name, error, kBound, flops_f, flops_m, bytes_f, bytes_m, false, note};
    c.passed = error < kBound && (!flops_checked || flops_f + flops_gap == flops_m) &&
               same_total(bytes_f + bytes_gap, bytes_m);
    return c;
  }
};

double io_bytes(const OpRun& run) {
  const CtaCount t = run.total();
  return static_cast<double>(t.bytes_unique + t.bytes_written);
}
double io_bytes(const hw::LaunchTotals& m) { return m.dram_read_bytes + m.dram_write_bytes; }

std::vector<hw::Launch> lower(const hw::HardwareSpec& hw, models::OpKind kind, models::OpShape shape) {
  return models::default_kernel_models().lower(models::Op(kind, hw::DType::kBf16, std::move(shape)), hw,
                                               "check");
}

Row gemm_row(const hw::HardwareSpec& hw, std::int64_t M, std::int64_t N, std::int64_t K, std::uint32_t seed) {
  models::GemmProblem p;
  p.M = M;
  p.N = N;
  p.K = K;
  p.a = "a";
  p.b = "b";
  p.c = "c";
  const auto t = models::gemm_tiling(p, hw);
  const Tensor a = random_tensor({M, K}, seed), b = random_tensor({K, N}, seed + 1);
  const OpRun run = gemm(a, b, t, kBf16);
  hw::LaunchTotals m;
  for (const auto& l : models::lower_gemm(p, hw, "check")) {
    if (l.family == "gemm" || l.family == "gemm_splitk_reduce") m += hw::totals(l);
  }
  Row r;
  r.name = fmt::format("gemm {}x{}x{} bf16 ({}x{} tiles, split {})", M, N, K, t.tile_m, t.tile_n, t.split);
  r.error = relative_error(run.out, reference::gemm(a, b));
  r.flops_f = static_cast<double>(run.kernels[0].total().math_flops);
  r.flops_m = m.tensor_flops;
  const std::int64_t last = K - (t.split - 1) * t.k_per_split;
  r.flops_gap = static_cast<double>(2 * t.tile_m * t.tile_n * ceil_div(M, t.tile_m) * ceil_div(N, t.tile_n) *
                                    (t.k_per_split - ceil_div(last, t.tile_k) * t.tile_k));
  r.bytes_f = io_bytes(run);
  r.bytes_m = io_bytes(m);
  r.note = "padded tile FLOPs; A, B read once, C (or fp32 partials + reduce) written once";
  if (r.flops_gap > 0) {
    r.note += fmt::format("; the model charges the last K slice ({} deep) as {}: +{} FLOPs", last,
                          t.k_per_split, r.flops_gap);
  }
  return r;
}

Row prefill_row(const hw::HardwareSpec& hw, bool causal) {
  const std::int64_t B = 2, H = 3, S = 200, D = 64;
  const Tensor q = random_tensor({B, H, S, D}, 20), k = random_tensor({B, H, S, D}, 21),
               v = random_tensor({B, H, S, D}, 22);
  const OpRun run = flash_attention(q, k, v, causal, FlashTiling{128, 128, false}, kBf16);
  const auto ls = lower(hw, models::OpKind::kSdpa, models::SdpaShape{B, H, S, D, causal});
  const hw::LaunchTotals m = hw::totals(launch_of(ls, "cudnn_sdpa_fwd"));
  Row r;
  r.name = fmt::format("sdpa B={} H={} S={} D={} {} (cuDNN 128x128 tiles)", B, H, S, D,
                       causal ? "causal" : "non-causal");
  r.error = relative_error(run.out, reference::attention(q, k, v, causal));
  r.flops_f = static_cast<double>(run.total().math_flops);
  r.flops_m = m.tensor_flops;
  r.bytes_f = io_bytes(run);
  r.bytes_m = io_bytes(m);
  r.note = "whole 128x128 score tiles, causal units stop at the diagonal tile; Q, K, V once, O once";
  return r;
}

Row decode_row(const hw::HardwareSpec& hw) {
  const std::int64_t B = 2, Hq = 8, Hkv = 2, L = 517, D = 64;
  const auto ls = lower(hw, models::OpKind::kSdpaDecode, models::SdpaDecodeShape{B, Hq, Hkv, L, D});
  const hw::Launch& split = ls.at(0);
  const std::int64_t splits = split.grid.x;
  const Tensor q = random_tensor({B, Hq, D}, 30), k = random_tensor({B, Hkv, L, D}, 31),
               v = random_tensor({B, Hkv, L, D}, 32);
  const OpRun run = decode_attention(q, k, v, DecodePlan{splits, ceil_div(L, splits), 128, 16, 1}, kBf16);
  const hw::LaunchTotals m = hw::totals(ls);
  Row r;
  r.name = fmt::format("sdpa_decode B={} Hq={} Hkv={} L={} D={} (cuDNN, {} splits + combine)", B, Hq, Hkv,
                       L, D, splits);
  r.error = relative_error(run.out, reference::decode_attention(q, k, v));
  r.flops_f = static_cast<double>(run.kernels[0].total().math_flops);
  r.flops_m = hw::totals(split).tensor_flops;
  r.bytes_f = io_bytes(run);
  r.bytes_m = io_bytes(m);
  r.note = "16-row query tiles over 128-key tiles per split; partials (D + 2 fp32) out and back";
  return r;
}

// A kernel whose CUDA-core FLOPs are not compared (see Row).
Row small_row(std::string name, const OpRun& run, double error, const std::vector<hw::Launch>& ls,
              double bytes_gap, std::string note) {
  const hw::LaunchTotals m = hw::totals(ls);
  Row r;
  r.name = std::move(name);
  r.error = error;
  r.flops_f = static_cast<double>(run.total().math_flops);
  r.flops_m = m.fp32_flops;
  r.flops_checked = false;
  r.bytes_f = io_bytes(run);
  r.bytes_m = io_bytes(m);
  r.bytes_gap = bytes_gap;
  r.note = std::move(note);
  return r;
}

Row moe_row(const hw::HardwareSpec& hw) {
  const std::int64_t T = 37, d = 64, E = 8, F = 48, k = 2;
  const Tensor x = random_tensor({T, d}, 60, -2.f, 2.f);
  const float sd = 1.f / std::sqrt(static_cast<float>(d)), sf = 1.f / std::sqrt(static_cast<float>(F));
  const MoeWeights w{random_tensor({E, d}, 61, -sd, sd), random_tensor({E, 2 * F, d}, 62, -sd, sd),
                     random_tensor({E, d, F}, 63, -sf, sf)};
  models::GemmProblem router;
  router.M = T;
  router.N = E;
  router.K = d;
  MoeConfig cfg;
  cfg.top_k = k;
  cfg.renormalize = true;
  cfg.router_tiling = models::gemm_tiling(router, hw, true);
  cfg.hopper = true;
  const MoeRun run = moe(x, w, cfg);
  // The grouped GEMMs (gate_up, then down) against lower_grouped_gemm for the same routing.
  OpRun grouped;
  for (const auto& kc : run.run.kernels) {
    if (kc.name == "grouped_gemm") grouped.kernels.push_back(kc);
  }
  hw::LaunchTotals m;
  m += hw::totals(models::lower_grouped_gemm(run.rows_per_expert, 2 * F, d, hw::DType::kBf16, {}, {}, {}, hw).at(1));
  m += hw::totals(models::lower_grouped_gemm(run.rows_per_expert, d, F, hw::DType::kBf16, {}, {}, {}, hw).at(1));
  Row r;
  r.name = fmt::format("moe T={} d={} E={} F={} top-{} renormalized (grouped GEMMs)", T, d, E, F, k);
  r.error = relative_error(run.run.out, reference::moe(x, w, k, true));
  r.flops_f = static_cast<double>(grouped.total().math_flops);
  r.flops_m = m.tensor_flops;
  r.bytes_f = io_bytes(grouped);
  r.bytes_m = io_bytes(m);
  r.note = "error: the whole block; FLOPs and bytes: the two grouped GEMMs (whole 64x128 tiles)";
  return r;
}

}  // namespace

std::vector<FunctionalCheck> run_functional_checks(const hw::HardwareSpec& h100) {
  std::vector<Row> rows;
  rows.push_back(gemm_row(h100, 77, 130, 301, 1));
  rows.push_back(gemm_row(h100, 1, 4096, 4096, 3));
  rows.push_back(gemm_row(h100, 5, 304, 3000, 5));
  rows.push_back(prefill_row(h100, false));
  rows.push_back(prefill_row(h100, true));
  rows.push_back(decode_row(h100));

  for (const std::int64_t C : {200, 1500}) {
    const Tensor x = random_tensor({37, C}, 40, -4.f, 4.f);
    const OpRun run = softmax(x, softmax_rows_per_cta(C, kBf16), kBf16);
    rows.push_back(small_row(fmt::format("softmax 37x{}", C), run, relative_error(run.out, reference::softmax(x)),
                             lower(h100, models::OpKind::kSoftmax, models::RowShape{37, C}), 0,
                             "each row read and written once"));
  }
  for (const std::int64_t C : {200, 201}) {
    const Tensor x = random_tensor({37, C}, 41, -3.f, 3.f), g = random_tensor({C}, 42, 0.5f, 1.5f),
                 b = random_tensor({C}, 43);
    const OpRun ln = layer_norm(x, g, b, 1e-5f, kBf16);
    rows.push_back(small_row(fmt::format("layer_norm 37x{} ({})", C, C % 4 == 0 ? "fused" : "moments + forward"),
                             ln, relative_error(ln.out, reference::layer_norm(x, g, b, 1e-5)),
                             lower(h100, models::OpKind::kLayerNorm, models::RowShape{37, C}), 0,
                             "x, gamma, beta read once; y and mean, rstd (8 B/row) written"));
    const OpRun rms = rms_norm(x, g, 1e-6f, kBf16);
    // The model charges 8 B of statistics per row; RMSNorm stores rstd only (4 B), written
    // once, and on the two-kernel path read back once.
    const double gap = 4.0 * 37 * (C % 4 == 0 ? 1 : 2);
    rows.push_back(small_row(fmt::format("rms_norm 37x{} ({})", C, C % 4 == 0 ? "fused" : "moments + forward"),
                             rms, relative_error(rms.out, reference::rms_norm(x, g, 1e-6)),
                             lower(h100, models::OpKind::kRmsNorm, models::RowShape{37, C}), gap,
                             "the model charges 8 B of statistics per row, RMSNorm stores 4 (rstd)"));
  }
  {
    const Tensor x = random_tensor({5003}, 44, -6.f, 6.f);
    const auto silu_l = lower(h100, models::OpKind::kSilu, models::ElementwiseShape{5003});
    const auto gelu_l = lower(h100, models::OpKind::kGelu, models::ElementwiseShape{5003});
    const OpRun s = silu(x, kBf16), ge = gelu_erf(x, kBf16), gt = gelu_tanh(x, kBf16);
    rows.push_back(small_row("silu 5003", s, relative_error(s.out, reference::silu(x)), silu_l, 0,
                             "read and written once"));
    rows.push_back(small_row("gelu (erf) 5003", ge, relative_error(ge.out, reference::gelu_erf(x)), gelu_l, 0,
                             "read and written once"));
    rows.push_back(small_row("gelu (tanh) 5003", gt, relative_error(gt.out, reference::gelu_tanh(x)), gelu_l, 0,
                             "read and written once (the model's gelu launch)"));
  }
  {
    const std::int64_t B = 2, H = 3, S = 37, D = 64, n = B * H * S * D;
    const Tensor x = random_tensor({B, H, S, D}, 45);
    Tensor cos({S, D}), sin({S, D});
    for (std::int64_t s = 0; s < S; ++s) {
      for (std::int64_t d = 0; d < D; ++d) {
        const double angle = static_cast<double>(s) * std::pow(10000.0, -static_cast<double>(2 * (d % (D / 2))) / D);
        cos[s * D + d] = static_cast<float>(std::cos(angle));
        sin[s * D + d] = static_cast<float>(std::sin(angle));
      }
    }
    const auto ew = [&](models::EwFunc f, std::int64_t elems) {
      models::ElementwiseProblem p;
      p.func = f;
      p.n = elems;
      p.strided = true;
      return models::lower_elementwise(p, h100, "check").at(0);
    };
    const hw::Launch cat = models::lower_cat({n / 2, n / 2}, hw::DType::kBf16, false, {}, {}, h100);
    const std::vector<hw::Launch> ls{ew(models::EwFunc::kMul, n), ew(models::EwFunc::kNeg, n / 2), cat,
                                     ew(models::EwFunc::kMul, n), ew(models::EwFunc::kAdd, n)};
    const OpRun run = rope(x, cos, sin, RopeLaunch{cat.grid.x, false}, kBf16);
    rows.push_back(small_row(fmt::format("rope B={} H={} S={} D={} (5 eager kernels)", B, H, S, D), run,
                             relative_error(run.out, reference::rope(x, cos, sin)), ls,
                             2.0 * static_cast<double>((n - S * D) * kBf16),
                             "the model charges the broadcast [S, D] cos and sin tables as n-element DRAM "
                             "reads (their loads agree)"));
  }
  rows.push_back(moe_row(h100));

  std::vector<FunctionalCheck> out;
  for (const auto& r : rows) out.push_back(r.done());
  return out;
}

}  // namespace gpusim::functional
