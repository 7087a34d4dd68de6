#include "validation/tp_steps_suite.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "hw/gpu_engine.h"
#include "sim/error.h"
#include "validation/case_json.h"
#include "workloads/op_lowering.h"

namespace gpusim::validation {
namespace {

using models::Op;
using models::OpKind;

// tp_steps.py's MODELS.
struct LayerShape {
  std::int64_t d, heads, kv_heads, head_dim, d_ff;
};

LayerShape layer_shape(const std::string& model) {
  if (model == "llama3-8b") return {4096, 32, 8, 128, 14336};
  if (model == "llama3-70b") return {8192, 64, 8, 128, 28672};
  throw ConfigError("tp_steps", 0, "model", fmt::format("'{}' is not one of tp_steps.py's models", model));
}

}  // namespace

workloads::OpWorkload tp_layer_workload(const std::string& model, const std::string& phase, std::int64_t batch,
                                        std::int64_t length, int tp, int layers) {
  const LayerShape m = layer_shape(model);
  if (phase != "prefill" && phase != "decode") throw ConfigError("tp_steps", 0, "phase", "prefill or decode: " + phase);
  const bool prefill = phase == "prefill";
  const std::int64_t s = prefill ? length : 1, T = batch * s;
  const std::int64_t hq = m.heads / tp, hkv = m.kv_heads / tp, hd = m.head_dim, ff = m.d_ff / tp;
  const auto bf16 = hw::DType::kBf16;
  workloads::OpWorkload w;
  w.name = fmt::format("tp_steps {} {} b={} len={} tp={}", model, phase, batch, length, tp);
  w.default_dtype = bf16;
  const auto add = [&w](OpKind kind, models::OpShape shape) {
    w.ops.push_back({Op(kind, hw::DType::kBf16, std::move(shape)), 0});
  };
  const auto all_reduce = [&] {
    if (tp > 1) add(OpKind::kAllReduce, models::CollectiveShape{T * m.d * 2, tp});
  };
  for (int layer = 0; layer < layers; ++layer) {
    add(OpKind::kRmsNorm, models::RowShape{T, m.d});
    add(OpKind::kLinear, models::LinearShape{T, (hq + 2 * hkv) * hd, m.d});
    add(OpKind::kRope, models::RopeShape{batch, s, hq, hd});
    add(OpKind::kRope, models::RopeShape{batch, s, hkv, hd});
    if (prefill) {
      add(OpKind::kSdpa, models::SdpaShape{batch, hq, s, hd, true});
    } else {
      // kc[:, :, -1:] = k and the same for v: copies into a strided slice of the static cache.
      add(OpKind::kCopy, models::ElementwiseShape{batch * hkv * hd, true});
      add(OpKind::kCopy, models::ElementwiseShape{batch * hkv * hd, true});
      add(OpKind::kSdpaDecode, models::SdpaDecodeShape{batch, hq, hkv, length, hd});
    }
    add(OpKind::kLinear, models::LinearShape{T, m.d, hq * hd});
    all_reduce();
    add(OpKind::kAdd, models::ElementwiseShape{T * m.d});
    add(OpKind::kRmsNorm, models::RowShape{T, m.d});
    add(OpKind::kLinear, models::LinearShape{T, 2 * ff, m.d});
    // gate and up are chunks of one output: with more than one row, views that are not dense.
    add(OpKind::kSilu, models::ElementwiseShape{T * ff, T > 1});
    add(OpKind::kMul, models::ElementwiseShape{T * ff, T > 1});
    add(OpKind::kLinear, models::LinearShape{T, m.d, ff});
    all_reduce();
    add(OpKind::kAdd, models::ElementwiseShape{T * m.d});
  }
  return w;
}

std::vector<Comparison> compare_tp_steps(const std::vector<std::filesystem::path>& files, const hw::HardwareSpec& hw,
                                         const models::KernelModelRegistry& models, bool never_fitted) {
  std::vector<Comparison> out;
  for (const auto& file : files) {
    const nlohmann::json doc = read_json_file(file);
    try {
      for (const auto& row : doc.at("rows")) {
        const std::string model = row.at("model").get<std::string>(), phase = row.at("phase").get<std::string>();
        const std::int64_t batch = row.at("batch").get<std::int64_t>(), length = row.at("length").get<std::int64_t>();
        const int tp = row.at("tp").get<int>(), layers = row.at("layers").get<int>();
        const workloads::OpWorkload w = tp_layer_workload(model, phase, batch, length, tp, layers);
        const auto nodes = workloads::lower_ops(w, hw, models, file.string());
        const hw::EngineResult r = hw::run_engine(hw, hw::LaunchMode::kGraph, nodes);
        double compute_us = 0;
        for (const auto& k : r.kernels) {
          const auto kind = models::parse_op_kind(k.family);  // a collective's family is its op's name
          if (!kind || !models::is_collective(*kind)) compute_us += k.duration().seconds() * 1e6;
        }
        double measured_compute = 0;
        for (const auto& k : row.at("kernels_rank0")) {
          if (!k.at("name").get<std::string>().starts_with("ncclDevKernel")) measured_compute += k.at("us").get<double>();
        }
        // TP 4 is held out; so is every row of a repeat run (measured after the model was written).
        const bool repeat = file.filename().string().find("repeat") != std::string::npos;
        const bool held_out = never_fitted || tp == 4 || repeat;
        const std::string label = fmt::format("{} {} b={} len={} TP {} ({} layers){}", model, phase, batch, length, tp,
                                              layers, repeat ? " repeat" : "");
        out.push_back(figure_row(label + " graph step", fmt::format("TP{} {} graph step", tp, phase), held_out,
                                 row.at("graph_step_us").get<double>(), r.end.us()));
        out.push_back(figure_row(label + " compute kernels", fmt::format("TP{} {} kernels", tp, phase), held_out,
                                 measured_compute, compute_us));
      }
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(file.string(), 0, "rows", std::string("malformed: ") + e.what());
    }
  }
  return out;
}

}  // namespace gpusim::validation
