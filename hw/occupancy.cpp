#include "hw/occupancy.h"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

namespace gpusim::hw {
namespace {

constexpr int kUnlimited = std::numeric_limits<int>::max();

std::int64_t round_up(std::int64_t x, std::int64_t unit) { return (x + unit - 1) / unit * unit; }

}  // namespace

std::string_view name(OccupancyLimiter l) {
  switch (l) {
    case OccupancyLimiter::kWarps: return "warps";
    case OccupancyLimiter::kRegisters: return "registers";
    case OccupancyLimiter::kSharedMemory: return "shared memory";
    case OccupancyLimiter::kCtaSlots: return "CTA slots";
  }
  return "?";
}

Occupancy compute_occupancy(const SmSpec& sm, const BlockResources& block) {
  Occupancy o;
  o.warps_per_cta = static_cast<int>(round_up(block.threads, sm.warp_size) / sm.warp_size);
  o.registers_per_warp =
      static_cast<int>(round_up(static_cast<std::int64_t>(block.registers_per_thread) * sm.warp_size,
                                sm.register_alloc_unit));
  o.shared_memory_per_cta =
      round_up(block.shared_memory + sm.shared_memory_reserved_per_cta, sm.shared_memory_alloc_unit);

  // The hardware checks a CTA's registers as if its warps were spread evenly over all
  // sub-partitions, so the warp count is rounded up to a multiple of them.
  const std::int64_t registers_checked =
      static_cast<std::int64_t>(o.registers_per_warp) *
      round_up(o.warps_per_cta, sm.sub_partitions);
  const std::int64_t shared_limit = sm.shared_memory_per_cta + sm.shared_memory_reserved_per_cta;

  if (block.threads < 1 || block.threads > sm.max_threads_per_cta) {
    o.does_not_fit = fmt::format("a block of {} threads is outside 1..{}", block.threads,
                                 sm.max_threads_per_cta);
  } else if (block.registers_per_thread < 0 ||
             block.registers_per_thread > sm.max_registers_per_thread) {
    o.does_not_fit = fmt::format("{} registers per thread is outside 0..{}",
                                 block.registers_per_thread, sm.max_registers_per_thread);
  } else if (registers_checked > sm.max_registers_per_cta) {
    o.does_not_fit = fmt::format("the block needs {} registers; a CTA may hold {}",
                                 registers_checked, sm.max_registers_per_cta);
  } else if (block.shared_memory < 0 || o.shared_memory_per_cta > shared_limit) {
    o.does_not_fit = fmt::format("{} bytes of shared memory per CTA exceed the limit of {}",
                                 block.shared_memory, sm.shared_memory_per_cta);
  }
  if (!o.does_not_fit.empty()) return o;

  o.limit_warps = sm.max_warps / o.warps_per_cta;
  if (o.registers_per_warp == 0) {
    o.limit_registers = kUnlimited;
  } else {
    const int warps_per_sub_partition = sm.registers / sm.sub_partitions / o.registers_per_warp;
    o.limit_registers = warps_per_sub_partition * sm.sub_partitions / o.warps_per_cta;
  }
  o.limit_shared_memory = static_cast<int>(
      std::min<std::int64_t>(sm.shared_memory / o.shared_memory_per_cta, kUnlimited));
  o.limit_cta_slots = sm.max_ctas;

  o.ctas_per_sm =
      std::min({o.limit_warps, o.limit_registers, o.limit_shared_memory, o.limit_cta_slots});
  if (o.ctas_per_sm == 0) {
    o.does_not_fit = "no CTA fits: the block needs more of a resource than one SM has";
    return o;
  }
  o.warps_per_sm = o.ctas_per_sm * o.warps_per_cta;
  o.theoretical = static_cast<double>(o.warps_per_sm) / sm.max_warps;
  const std::pair<int, OccupancyLimiter> limits[] = {
      {o.limit_warps, OccupancyLimiter::kWarps},
      {o.limit_registers, OccupancyLimiter::kRegisters},
      {o.limit_shared_memory, OccupancyLimiter::kSharedMemory},
      {o.limit_cta_slots, OccupancyLimiter::kCtaSlots}};
  for (const auto& [limit, limiter] : limits) {
    if (limit == o.ctas_per_sm) o.binding.push_back(limiter);
  }
  return o;
}

}  // namespace gpusim::hw
