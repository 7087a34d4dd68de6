// The launches the models produce for every op instance measured on the H100
// (validation/data/ops_h100.csv, rows with held_out = 0 only), kernel by kernel: grid, block,
// registers and shared memory. Instances the models reproduce exactly are pinned; the others
// are listed (printed) with what differs, and their number is pinned so a regression shows.
#include <gtest/gtest.h>

#include <iostream>
#include <optional>
#include <regex>
#include <set>

#include "models/families.h"
#include "models/flash_common.h"
#include "tests/models/model_test_support.h"

namespace gpusim::models {
namespace {

using hw::DType;
using testing::MeasuredKernel;

std::int64_t param(const std::string& json, const std::string& key, std::int64_t dflt = 0) {
  const std::regex re("\"" + key + "\":\\s*(-?[0-9]+)");
  std::smatch m;
  if (std::regex_search(json, m, re)) return std::stoll(m[1]);
  return dflt;
}

DType dtype_of(const std::string& s) {
  if (s == "fp16") return DType::kFp16;
  if (s == "fp32") return DType::kFp32;
  if (s == "tf32") return DType::kTf32;
  return DType::kBf16;
}

// The op of a measured instance; for the forced-flash variants, `flash_arch` is set so that the
// model is asked for its FlashAttention-2 lowering (the default on sm_80 / sm_120).
std::optional<Op> op_of(const MeasuredKernel& k, bool* flash_arch) {
  const auto& j = k.params_json;
  *flash_arch = false;
  const DType d = dtype_of(k.dtype);
  if (k.op == "matmul") return Op(OpKind::kMatmul, d, MatmulShape{param(j, "M"), param(j, "N"), param(j, "K")});
  if (k.op == "linear")
    return Op(OpKind::kLinear, d,
              LinearShape{param(j, "M"), param(j, "N"), param(j, "K"), param(j, "bias") != 0});
  if (k.op == "sdpa" || k.op == "sdpa_flash") {
    *flash_arch = k.op == "sdpa_flash";
    return Op(OpKind::kSdpa, d,
              SdpaShape{param(j, "B"), param(j, "H"), param(j, "S"), param(j, "D"), param(j, "causal") != 0});
  }
  if (k.op == "sdpa_decode" || k.op == "sdpa_decode_flash" || k.op == "sdpa_decode_repkv" ||
      k.op == "sdpa_decode_repkv_flash") {
    *flash_arch = k.op.ends_with("_flash");
    const bool rep = k.op.find("repkv") != std::string::npos;
    const std::int64_t hq = param(j, "Hq");
    return Op(OpKind::kSdpaDecode, d,
              SdpaDecodeShape{param(j, "B"), hq, rep ? hq : param(j, "Hkv"), param(j, "L"), param(j, "D")});
  }
  if (k.op == "naive_attention")
    return Op(OpKind::kNaiveAttention, d,
              NaiveAttentionShape{param(j, "B"), param(j, "H"), param(j, "S"), param(j, "D"),
                                  param(j, "causal") != 0});
  if (k.op == "add") return Op(OpKind::kAdd, d, ElementwiseShape{param(j, "n")});
  if (k.op == "mul") return Op(OpKind::kMul, d, ElementwiseShape{param(j, "n")});
  if (k.op == "silu") return Op(OpKind::kSilu, d, ElementwiseShape{param(j, "n")});
  if (k.op == "gelu") return Op(OpKind::kGelu, d, ElementwiseShape{param(j, "n")});
  if (k.op == "cast_to_bf16")
    return Op(OpKind::kCast, DType::kBf16, CastShape{param(j, "n"), DType::kFp32, DType::kBf16});
  if (k.op == "cast_to_fp32")
    return Op(OpKind::kCast, DType::kFp32, CastShape{param(j, "n"), DType::kBf16, DType::kFp32});
  if (k.op == "layer_norm") return Op(OpKind::kLayerNorm, DType::kBf16, RowShape{param(j, "R"), param(j, "C")});
  if (k.op == "rms_norm") return Op(OpKind::kRmsNorm, DType::kBf16, RowShape{param(j, "R"), param(j, "C")});
  if (k.op == "softmax") return Op(OpKind::kSoftmax, d, RowShape{param(j, "R"), param(j, "C")});
  return std::nullopt;
}

struct Instance {
  std::string op, dtype, shape;
  std::vector<MeasuredKernel> kernels;
};

std::vector<Instance> instances() {
  std::vector<Instance> out;
  for (const auto& k : testing::measured_h100()) {
    if (out.empty() || out.back().op != k.op || out.back().shape != k.shape ||
        out.back().dtype != k.dtype) {
      out.push_back({k.op, k.dtype, k.shape, {}});
    }
    out.back().kernels.push_back(k);
  }
  return out;
}

// Our names are the profiler's demangled names without the argument list and with long lambda
// functors shortened; they match when the measured name contains ours up to its first
// template argument (whole names for nvjet, xmma and cuDNN kernels, which have none).
bool same_kernel(const std::string& ours, const std::string& measured) {
  const auto lt = ours.find('<');
  const auto cut = lt == std::string::npos ? std::string::npos : ours.find(", ", lt);
  return measured.find(ours.substr(0, cut)) != std::string::npos;
}

// "" when the launches match the measured kernels, else what differs.
std::string compare(const std::vector<Launch>& ls, const std::vector<MeasuredKernel>& ks) {
  std::string diff;
  if (ls.size() != ks.size()) {
    diff += "kernels " + std::to_string(ls.size()) + " vs measured " + std::to_string(ks.size()) + "; ";
  }
  for (std::size_t i = 0; i < std::min(ls.size(), ks.size()); ++i) {
    const auto& l = ls[i];
    const auto& k = ks[i];
    if (k.grid.empty()) {  // memset / memcpy: the name says which
      if (l.name != k.name) diff += "#" + std::to_string(i) + " " + l.name + " vs " + k.name + "; ";
      continue;
    }
    if (!same_kernel(l.name, k.name)) diff += "#" + std::to_string(i) + " name " + l.name + "; ";
    const std::string got = testing::dims(l.grid) + " " + testing::dims(l.block) + " r" +
                            std::to_string(l.regs_per_thread) + " s" + std::to_string(l.smem_per_cta);
    const std::string want = k.grid + " " + k.block + " r" + k.regs + " s" + k.smem;
    if (got != want) diff += "#" + std::to_string(i) + " " + got + " vs " + want + "; ";
  }
  return diff;
}

TEST(MeasuredLaunchesTest, ReproducesTheH100LaunchConfigurations) {
  const auto insts = instances();
  if (insts.empty()) GTEST_SKIP() << "validation/data/ops_h100.csv not found";
  const hw::HardwareSpec h100 = testing::preset("h100");
  hw::HardwareSpec h100_as_fa2 = h100;  // asks for the FA2 lowering with the H100's resources
  h100_as_fa2.arch = "sm_80";

  int matched = 0, total = 0;
  std::set<std::string> mismatched;
  for (const auto& inst : insts) {
    bool flash = false;
    const auto op = op_of(inst.kernels.front(), &flash);
    if (!op) continue;
    if (inst.op == "sdpa_efficient") continue;  // a backend PyTorch never picks by default here
    ++total;
    const auto ls = testing::lower(*op, flash ? h100_as_fa2 : h100);
    const std::string diff = compare(ls, inst.kernels);
    if (diff.empty()) {
      ++matched;
    } else {
      mismatched.insert(inst.op + " " + inst.dtype + " " + inst.shape);
      std::cout << "[differs] " << inst.op << " " << inst.dtype << " " << inst.shape << ": " << diff << "\n";
    }
  }
  std::cout << "matched " << matched << " of " << total << " measured instances\n";
  // The tile/split choices the cost estimate does not reproduce (near-ties between skinny
  // configurations; see models/gemm_model.cpp). Everything else matches kernel for kernel.
  const std::set<std::string> known = {
      "matmul bf16 M=16 N=4096 K=4096",          // split choice differs from cuBLAS's 128x16 split 2
      "matmul bf16 M=8 N=1024 K=16384",          // split choice differs from cuBLAS's 128x8 split 9
      "linear bf16 M=16 N=14336 K=4096 bias=0",  // a near-tie: 10 KiB per-SM in-flight bytes tips the split
      "linear bf16 M=1 N=11008 K=4096 bias=0",   // tile choice differs from cuBLAS's 128x8
      "linear bf16 M=1 N=1536 K=8960 bias=0",    // 2x1 vs 4x1 clusters (72 CTAs either way)
  };
  EXPECT_EQ(mismatched, known);
  EXPECT_EQ(total, 91);
}

}  // namespace
}  // namespace gpusim::models
