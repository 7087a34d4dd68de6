#include "models/common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "sim/error.h"

namespace gpusim::models::detail {

int sm_version(const hw::HardwareSpec& hw) {
  const std::string_view a = hw.arch;
  if (a.size() > 3 && a.substr(0, 3) == "sm_") {
    int v = 0;
    for (const char c : a.substr(3)) {
      if (!std::isdigit(static_cast<unsigned char>(c))) {
        v = -1;
        break;
      }
      v = v * 10 + (c - '0');
    }
    if (v > 0) return v;
  }
  throw ModelError(fmt::format("hardware {}: arch '{}' is not of the form sm_<digits>",
                               hw.name, hw.arch));
}

bool is_hopper(const hw::HardwareSpec& hw) { return sm_version(hw) / 10 == 9; }

hw::TensorUse tensor(const std::string& tag, std::string_view name, double bytes) {
  if (tag.empty()) return hw::TensorUse{std::string(name), static_cast<std::int64_t>(bytes)};
  return hw::TensorUse{fmt::format("{}.{}", tag, name), static_cast<std::int64_t>(bytes)};
}

std::vector<Share> split_evenly(std::int64_t items, std::int64_t ctas) {
  std::vector<Share> out;
  if (ctas <= 0) return out;
  const std::int64_t lo = items / ctas;
  const std::int64_t rem = items % ctas;
  if (rem > 0) out.push_back({rem, lo + 1});
  if (ctas - rem > 0) out.push_back({ctas - rem, lo});
  return out;
}

namespace {
bool same_work(const hw::CtaWork& a, const hw::CtaWork& b) {
  return a.tensor_flops == b.tensor_flops && a.tensor_dtype == b.tensor_dtype &&
         a.fp32_flops == b.fp32_flops && a.sfu_ops == b.sfu_ops && a.l2_bytes == b.l2_bytes &&
         a.dram_read_bytes == b.dram_read_bytes && a.dram_write_bytes == b.dram_write_bytes &&
         a.max_inflight_bytes == b.max_inflight_bytes && a.bulk_copies == b.bulk_copies &&
         a.fixed == b.fixed &&
         a.fp32_efficiency == b.fp32_efficiency && a.tensor_efficiency == b.tensor_efficiency &&
         a.pipe_overlap == b.pipe_overlap &&
         a.critical_path == b.critical_path && a.issue_path == b.issue_path;
}
}  // namespace

void add_class(hw::Launch& launch, std::int64_t count, const hw::CtaWork& work) {
  if (count <= 0) return;
  if (!launch.ctas.empty() && same_work(launch.ctas.back().work, work)) {
    launch.ctas.back().count += count;
    return;
  }
  launch.ctas.push_back(hw::CtaClass{count, work});
}

hw::Launch memset_launch(const std::string& tag, std::string_view name, std::int64_t bytes) {
  hw::Launch l;
  l.name = "Memset (Device)";
  l.family = "memset";
  l.grid = {1, 1, 1};
  l.block = {32, 1, 1};
  // The workspaces cuBLAS, cuDNN and the radix sort clear are a few KiB at most: the profiler
  // shows 0.70-0.83 us for each (ops3_h100.json, ops3_h200.json), the launch alone. Their bytes
  // go into L2's state (writes) but take no time of their own.
  add_class(l, 1, hw::CtaWork{});
  l.writes = {tensor(tag, name, static_cast<double>(bytes))};
  return l;
}

}  // namespace gpusim::models::detail

namespace gpusim::models::detail {

hw::Launch streaming_launch(const StreamingKernel& k, const hw::HardwareSpec& hw) {
  hw::Launch l;
  l.name = k.name;
  l.family = k.family;
  const std::int64_t ctas = std::max<std::int64_t>(1, k.ctas);
  l.grid = {ctas, 1, 1};
  l.block = {k.threads, 1, 1};
  l.regs_per_thread = k.regs;
  l.smem_per_cta = k.smem;
  hw::CtaWork w;
  const double n = static_cast<double>(ctas);
  w.fp32_flops = k.fp32_flops / n;
  w.l2_bytes = (k.read_bytes + k.write_bytes) / n;
  w.dram_read_bytes = k.read_bytes / n;
  w.dram_write_bytes = k.write_bytes / n;
  w.max_inflight_bytes = k.inflight_per_cta;
  w.critical_path = sim::Time::from_seconds(k.round_trips * hw.dram.latency.seconds());
  add_class(l, ctas, w);
  l.reads = k.reads;
  l.writes = k.writes;
  return l;
}

hw::Launch memcpy_launch(bool to_host, double bytes, const hw::TensorUse& from,
                         const hw::TensorUse& to, const hw::HardwareSpec& hw) {
  // The copy is spread over the chip like a copy kernel: one CTA per 64 KiB, at most 2 per SM.
  constexpr double kBytesPerCta = 64.0 * 1024;
  StreamingKernel k;
  k.name = to_host ? "Memcpy DtoH (Device -> Pinned)" : "Memcpy DtoD (Device -> Device)";
  k.family = "memcpy";
  k.ctas = std::clamp<std::int64_t>(static_cast<std::int64_t>(bytes / kBytesPerCta), 1,
                                    2 * static_cast<std::int64_t>(hw.sm_count));
  k.read_bytes = bytes;
  k.write_bytes = to_host ? 0 : bytes;
  k.inflight_per_cta = 16.0 * 1024;
  k.reads = {from};
  if (!to_host) k.writes = {to};
  return streaming_launch(k, hw);
}

std::string aten_type_name(hw::DType d) {
  switch (d) {
    case hw::DType::kBf16: return "c10::BFloat16";
    case hw::DType::kFp16: return "c10::Half";
    case hw::DType::kFp8: return "c10::Float8_e4m3fn";
    default: return "float";
  }
}

std::int64_t last_pow2(std::int64_t n) {
  std::int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

sim::Time dram_round_trips(double n, const hw::HardwareSpec& hw) {
  return sim::Time::from_seconds(n * hw.dram.latency.seconds());
}

}  // namespace gpusim::models::detail
