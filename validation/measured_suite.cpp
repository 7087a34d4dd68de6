#include "validation/measured_suite.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "hw/gpu_engine.h"
#include "sim/error.h"
#include "validation/csv.h"
#include "validation/kernel_class.h"

namespace gpusim::validation {
namespace {

using models::Op;
using models::OpKind;

hw::DType dtype_of(const std::string& text, const CsvTable& t, std::size_t row) {
  const auto d = hw::parse_dtype(text);
  if (!d) throw ConfigError(t.file().string(), t.line_of(row), "dtype", "unknown dtype '" + text + "'");
  return *d;
}

// The op a measured row describes, or nullopt with the reason gpusim does not model it.
std::optional<Op> op_of(const std::string& name, const std::string& dtype_text,
                        const nlohmann::json& p, std::string& skip_reason, const CsvTable& t,
                        std::size_t row) {
  if (p.contains("backend") || p.contains("repeat_kv")) {
    skip_reason = "a forced SDPA backend or repeated KV heads: not what the op lowers to by default";
    return std::nullopt;
  }
  auto i = [&p](const char* key) { return p.at(key).get<std::int64_t>(); };
  auto flag = [&p](const char* key) { return p.contains(key) && p.at(key).get<int>() != 0; };
  if (name == "cast_to_bf16") {
    return Op(OpKind::kCast, hw::DType::kBf16, models::CastShape{i("n"), hw::DType::kFp32, hw::DType::kBf16});
  }
  if (name == "cast_to_fp32") {
    return Op(OpKind::kCast, hw::DType::kFp32, models::CastShape{i("n"), hw::DType::kBf16, hw::DType::kFp32});
  }
  const hw::DType dtype = dtype_of(dtype_text, t, row);
  const auto kind = models::parse_op_kind(name);
  if (!kind) {
    skip_reason = "no op named '" + name + "'";
    return std::nullopt;
  }
  switch (*kind) {
    case OpKind::kMatmul: return Op(*kind, dtype, models::MatmulShape{i("M"), i("N"), i("K")});
    case OpKind::kLinear: return Op(*kind, dtype, models::LinearShape{i("M"), i("N"), i("K"), flag("bias")});
    case OpKind::kSdpa: return Op(*kind, dtype, models::SdpaShape{i("B"), i("H"), i("S"), i("D"), flag("causal")});
    case OpKind::kSdpaDecode:
      return Op(*kind, dtype, models::SdpaDecodeShape{i("B"), i("Hq"), i("Hkv"), i("L"), i("D")});
    case OpKind::kNaiveAttention:
      return Op(*kind, dtype, models::NaiveAttentionShape{i("B"), i("H"), i("S"), i("D"), flag("causal")});
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSilu:
    case OpKind::kGelu: return Op(*kind, dtype, models::ElementwiseShape{i("n")});
    case OpKind::kLayerNorm:
    case OpKind::kRmsNorm:
    case OpKind::kSoftmax: return Op(*kind, dtype, models::RowShape{i("R"), i("C")});
    case OpKind::kCast:
    case OpKind::kCopy:
    case OpKind::kRope:
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
    case OpKind::kSendRecv: break;  // not in the measured op files
  }
  skip_reason = "unhandled op '" + name + "'";
  return std::nullopt;
}

}  // namespace

std::vector<MeasuredOp> read_measured_ops(const std::filesystem::path& csv) {
  const CsvTable t = CsvTable::read(csv);
  std::vector<MeasuredOp> ops;
  std::map<std::string, std::size_t> index;  // label -> position in ops
  const auto has = [&](const char* column) {
    return std::ranges::find(t.header(), column) != t.header().end();
  };
  const bool per_kernel_times = has("duration_us_median");
  const bool launch_shapes = has("grid") && has("block");
  std::vector<double> primary_us;  // per op: its primary kernel's median duration
  for (std::size_t row = 0; row < t.rows(); ++row) {
    const std::string label = t.at(row, "op") + " " + t.at(row, "dtype") + " " + t.at(row, "shape");
    auto [it, fresh] = index.emplace(label, ops.size());
    if (fresh) {
      MeasuredOp m;
      m.label = label;
      m.family = t.at(row, "family");
      m.held_out = t.at(row, "held_out") == "1";
      m.measured_us = t.number(row, "op_kernel_time_us_median");
      nlohmann::json params;
      try {
        params = nlohmann::json::parse(t.at(row, "params_json"));
        m.op = op_of(t.at(row, "op"), t.at(row, "dtype"), params, m.skip_reason, t, row);
      } catch (const nlohmann::json::exception& e) {
        throw ConfigError(csv.string(), t.line_of(row), "params_json", e.what());
      } catch (const std::invalid_argument& e) {
        throw ConfigError(csv.string(), t.line_of(row), "params_json", e.what());
      }
      ops.push_back(std::move(m));
      primary_us.push_back(0.0);
    }
    MeasuredOp& m = ops[it->second];
    m.measured_kernels.push_back(t.at(row, "kernel_name"));
    m.measured_launches.push_back({m.measured_kernels.back(),
                                   launch_shapes ? t.at(row, "grid") : "",
                                   launch_shapes ? t.at(row, "block") : "",
                                   per_kernel_times ? t.number(row, "duration_us_median") : 0.0});
    if (per_kernel_times && !is_helper_kernel(m.measured_kernels.back())) {
      const double us = t.number(row, "duration_us_median");
      if (m.primary_kernel.empty() || us > primary_us[it->second]) {
        m.primary_kernel = m.measured_kernels.back();
        primary_us[it->second] = us;
      }
    }
  }
  return ops;
}

std::vector<Comparison> compare_measured(const std::vector<MeasuredOp>& ops,
                                         const hw::HardwareSpec& hw,
                                         const models::KernelModelRegistry& models) {
  std::vector<Comparison> out;
  for (const auto& m : ops) {
    if (!m.op) continue;
    std::vector<hw::KernelNode> nodes;
    for (auto& l : models.lower(*m.op, hw, "op")) nodes.push_back({std::move(l), m.label, 0, {}, std::nullopt});
    const hw::EngineResult r = hw::run_engine(hw, hw::LaunchMode::kGraph, nodes);
    Comparison c;
    c.reference = m;
    double primary_us = -1;
    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
      const hw::KernelResult& k = r.kernels[i];
      const hw::Launch& l = nodes[i].launch;
      c.simulated_us += k.duration().us();
      c.simulated_kernels.push_back(k.name);
      c.simulated_launches.push_back({k.name, fmt::format("{}x{}x{}", l.grid.x, l.grid.y, l.grid.z),
                                      fmt::format("{}x{}x{}", l.block.x, l.block.y, l.block.z),
                                      k.duration().us()});
      if (!is_helper_kernel(k.name) && k.duration().us() > primary_us) {
        primary_us = k.duration().us();
        c.primary_kernel = k.name;
      }
      if (k.duration().us() > c.main_kernel_us) {
        c.main_kernel_us = k.duration().us();
        c.main_family = k.family;
        c.main_kernel = k.name;
      }
    }
    c.error_pct = 100.0 * (c.simulated_us - m.measured_us) / m.measured_us;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace gpusim::validation
