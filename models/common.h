// Small helpers shared by the kernel cost models: integer tiling arithmetic, element sizes,
// architecture tests, tensor names, and splitting a count of work items
// over CTAs. Nothing here knows about a particular kernel family.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"

namespace gpusim::models::detail {

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
constexpr std::int64_t round_up(std::int64_t a, std::int64_t m) { return ceil_div(a, m) * m; }

// Bytes of one element in memory (tf32 is stored as fp32).
inline double elt_bytes(hw::DType d) { return hw::bytes_per_element(d); }

// The compute capability of "sm_90" as 90; throws ModelError when `arch` is not "sm_<digits>".
int sm_version(const hw::HardwareSpec& hw);
// Hopper (sm_90): wgmma/TMA kernels, the only arch here where cuBLAS runs persistent kernels.
bool is_hopper(const hw::HardwareSpec& hw);

// The scalar type ATen's kernel names spell for a dtype: "c10::BFloat16", "c10::Half", "float".
std::string aten_type_name(hw::DType d);
// Largest power of two not above n (ATen's last_pow2), for its launch configurations.
std::int64_t last_pow2(std::int64_t n);
// `n` dependent DRAM round trips at the chip's idle latency (a critical path's unit).
sim::Time dram_round_trips(double n, const hw::HardwareSpec& hw);

// A tensor of the op `tag`, named "<tag>.<name>" so kernels of one op share it through L2. An
// empty tag means `name` is already unique (a caller that names the tensors itself).
hw::TensorUse tensor(const std::string& tag, std::string_view name, double bytes);

// Splits `items` work items over `ctas` CTAs as the blockIdx-ordered schedule does: the first
// (items % ctas) CTAs take ceil(items / ctas), the rest floor. Returns {count, items per CTA}
// pairs, one or two of them, skipping empty ones (a CTA with 0 items is listed with 0).
struct Share {
  std::int64_t ctas = 0;
  std::int64_t items = 0;
};
std::vector<Share> split_evenly(std::int64_t items, std::int64_t ctas);

// Appends a CTA class, merging it into the previous one when the work is identical.
void add_class(hw::Launch& launch, std::int64_t count, const hw::CtaWork& work);

// A cudaMemsetAsync of `bytes` into the tensor `<tag>.<name>`, as the profiler shows it: one
// tiny launch that writes the bytes.
hw::Launch memset_launch(const std::string& tag, std::string_view name, std::int64_t bytes);

}  // namespace gpusim::models::detail

namespace gpusim::models::detail {

// A kernel that streams bytes with little arithmetic (copies, gathers, reductions, small
// bookkeeping kernels): its `ctas` CTAs share the bytes and FLOPs evenly. Each CTA keeps
// `inflight_per_cta` bytes of loads in flight and waits `round_trips` dependent memory
// latencies (loads that feed the next load, block-wide reductions) on its critical path.
struct StreamingKernel {
  std::string name, family;
  std::int64_t ctas = 1, threads = 128;
  int regs = 32;
  std::int64_t smem = 0;
  double read_bytes = 0, write_bytes = 0, fp32_flops = 0;
  double inflight_per_cta = 0;
  double round_trips = 1;
  std::vector<hw::TensorUse> reads, writes;
};
hw::Launch streaming_launch(const StreamingKernel& k, const hw::HardwareSpec& hw);

// cudaMemcpyAsync of `bytes` as the profiler shows it ("Memcpy DtoD (Device -> Device)" or
// "Memcpy DtoH (Device -> Pinned)"): a copy-engine transfer, modeled as one small CTA.
hw::Launch memcpy_launch(bool to_host, double bytes, const hw::TensorUse& from,
                         const hw::TensorUse& to, const hw::HardwareSpec& hw);

}  // namespace gpusim::models::detail
