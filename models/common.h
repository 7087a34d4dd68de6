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

// A tensor of the op `tag`, named "<tag>.<name>" so kernels of one op share it through L2.
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
