#include "validation/collective_suite.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hw/gpu_engine.h"
#include "models/collective_model.h"
#include "validation/case_json.h"

namespace gpusim::validation {
namespace {

constexpr double kMinBytes = 16.0 * 1024 * 1024;  // below: host-bound through PyTorch

// nccl-tests' names (all_reduce_perf) and torch.distributed's (all_reduce) to the model's kinds.
std::optional<models::Collective> kind_of(std::string op) {
  if (op.ends_with("_perf")) op = op.substr(0, op.size() - 5);
  if (op == "all_reduce") return models::Collective::kAllReduce;
  if (op == "all_gather") return models::Collective::kAllGather;
  if (op == "reduce_scatter") return models::Collective::kReduceScatter;
  if (op == "all_to_all" || op == "alltoall") return models::Collective::kAllToAll;
  if (op == "sendrecv") return models::Collective::kSendRecv;
  return std::nullopt;
}

Comparison compare_one(const hw::HardwareSpec& hw, models::Collective kind, double bytes, int ranks, hw::DType dtype,
                       double measured_us, bool held_out, const std::string& label) {
  Comparison c;
  c.reference.label = label;
  c.reference.family = std::string(models::name(kind));
  c.reference.held_out = held_out;
  c.reference.measured_us = measured_us;
  c.simulated_us = simulate_collective_us(hw, static_cast<int>(kind), bytes, ranks, dtype);
  c.main_family = c.reference.family;
  c.main_kernel_us = c.simulated_us;
  c.error_pct = (c.simulated_us - measured_us) / measured_us * 100.0;
  return c;
}

}  // namespace

double simulate_collective_us(const hw::HardwareSpec& hw, int kind, double bytes, int ranks, hw::DType dtype) {
  const models::CollectiveProblem p{static_cast<models::Collective>(kind), bytes, ranks, std::min(ranks, hw.system.gpus), dtype};
  hw::Launch launch = models::lower_collective(p, hw, {"buffer.in", static_cast<std::int64_t>(bytes)},
                                               {"buffer.out", static_cast<std::int64_t>(bytes)});
  const std::vector<hw::KernelNode> nodes{hw::KernelNode{std::move(launch), "collective", 0, {}, std::nullopt}};
  const hw::EngineResult r = hw::run_engine(hw, hw::LaunchMode::kGraph, nodes);
  return r.kernels.front().duration().seconds() * 1e6;
}

std::vector<Comparison> compare_measured_collectives(const std::vector<std::filesystem::path>& files,
                                                     const hw::HardwareSpec& hw) {
  std::vector<Comparison> out;
  for (const auto& file : files) {
    const nlohmann::json j = read_json_file(file);
    const std::string device = j.at("provenance").value("device_name", "?");
    for (const auto& row : j.at("rows")) {
      const double bytes = row.at("bytes").get<double>();
      if (bytes < kMinBytes) continue;
      const auto kind = kind_of(row.at("op").get<std::string>());
      if (!kind) continue;
      const int ranks = row.at("ranks").get<int>();
      // 64 MiB and 1 GiB (4^13, 4^15 bytes) calibrated the link efficiency; 16 and 256 MiB are held out.
      const bool held_out = bytes == 16.0 * 1024 * 1024 || bytes == 256.0 * 1024 * 1024;
      out.push_back(compare_one(hw, *kind, bytes, ranks, hw::DType::kBf16, row.at("us").get<double>(), held_out,
                                fmt::format("{} {} GPUs {:.0f} MiB bf16 ({})", models::name(*kind), ranks,
                                            bytes / (1024.0 * 1024.0), file.filename().string())));
    }
  }
  return out;
}

std::vector<Comparison> compare_graph_collectives(const std::vector<std::filesystem::path>& files,
                                                  const hw::HardwareSpec& hw, double min_bytes, double max_bytes,
                                                  bool never_fitted) {
  std::vector<Comparison> out;
  for (const auto& file : files) {
    const nlohmann::json j = read_json_file(file);
    for (const auto& row : j.at("rows")) {
      const double bytes = row.at("bytes").get<double>();
      if (bytes < min_bytes || bytes >= max_bytes || !row.contains("graph_us")) continue;
      const auto kind = kind_of(row.at("op").get<std::string>());
      if (!kind) continue;
      const int ranks = row.at("ranks").get<int>();
      // The first graph-timed files calibrated the per-call latency (system.interconnect.call_latency,
      // on their rows below 1 MiB); the other size grids (..._half.json, ..._third.json), measured
      // after, are held out.
      const std::string name = file.filename().string();
      const bool held_out =
          never_fitted || name.find("_half") != std::string::npos || name.find("_third") != std::string::npos;
      out.push_back(compare_one(hw, *kind, bytes, ranks, hw::DType::kBf16, row.at("graph_us").get<double>(), held_out,
                                fmt::format("{} {} GPUs {} bf16, graph ({})", models::name(*kind), ranks,
                                            bytes >= 1024.0 * 1024.0 ? fmt::format("{:.0f} MiB", bytes / (1024.0 * 1024.0))
                                                                     : fmt::format("{:.0f} KiB", bytes / 1024.0),
                                            file.filename().string())));
    }
  }
  return out;
}

std::vector<Comparison> compare_published_collectives(const std::filesystem::path& json, const hw::HardwareSpec& h100,
                                                      const hw::HardwareSpec& h200) {
  const nlohmann::json j = read_json_file(json);
  std::vector<Comparison> out;
  for (const auto& e : j.at("nccl_tests")) {
    const std::string system = e.value("system", "");
    const bool is_h200 = system.find("h200") != std::string::npos;
    const bool is_h100 = system.find("h100") != std::string::npos && system.find("pcie") == std::string::npos &&
                         system.find("gcp") == std::string::npos;
    if (!is_h100 && !is_h200) continue;
    if (!e["gpus"].is_number() || (e["nodes"].is_number() && e["nodes"].get<int>() != 1)) continue;
    const auto kind = kind_of(e.value("test", ""));
    if (!kind) continue;
    const int ranks = e["gpus"].get<int>();
    hw::HardwareSpec spec = is_h200 ? h200 : h100;
    const bool nvls = e["nvls"].is_boolean() && e["nvls"].get<bool>();
    spec.system.interconnect.nvls = nvls ? "on" : "off";
    const std::string dtype_name = e["dtype"].is_string() ? e["dtype"].get<std::string>() : "float";
    const hw::DType dtype = dtype_name == "half" ? hw::DType::kFp16 : dtype_name == "bfloat16" ? hw::DType::kBf16 : hw::DType::kFp32;
    const std::string title = e.at("source").value("title", "");
    for (const auto& r : e.at("rows")) {
      if (!r["bytes"].is_number() || !r["busbw_gbps"].is_number()) continue;
      const double bytes = r["bytes"].get<double>();
      if (bytes < kMinBytes) continue;
      // nccl-tests: busbw = bytes / time x factor.
      const double busbw = r["busbw_gbps"].get<double>() * 1e9;
      const double measured_us = bytes * models::bus_bandwidth_factor(*kind, ranks) / busbw * 1e6;
      out.push_back(compare_one(spec, *kind, bytes, ranks, dtype, measured_us, true,
                                fmt::format("{} {} GPUs {:.0f} MiB {} NVLS {} ({}; {})", models::name(*kind), ranks,
                                            bytes / (1024.0 * 1024.0), dtype_name, nvls ? "on" : "off", system,
                                            title.substr(0, 60))));
    }
  }
  return out;
}

}  // namespace gpusim::validation
