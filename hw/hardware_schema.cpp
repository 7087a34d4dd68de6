#include "hw/hardware_schema.h"

#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace gpusim::hw {
namespace {

constexpr double kKiB = 1024.0;
constexpr double kMiB = kKiB * kKiB;
constexpr double kGiB = kMiB * kKiB;
constexpr double kBig = 1e15;

constexpr std::array<std::string_view, 10> kDramKinds{"HBM2",   "HBM2e",  "HBM3",  "HBM3e", "HBM4",
                                                      "GDDR6",  "GDDR6X", "GDDR7", "LPDDR5",
                                                      "LPDDR5X"};
constexpr std::array<std::string_view, 4> kFabrics{"none", "nvswitch", "nvlink", "pcie"};
constexpr std::array<std::string_view, 2> kOnOff{"off", "on"};
constexpr std::array<std::string_view, 2> kPciePaths{"switch", "host_bridge"};
constexpr std::span<const std::string_view> kAnyText{};

#define GPUSIM_REF(member) [](HardwareSpec& s) -> FieldRef { return &s.member; }

const std::array kFields{
    FieldDef{"arch", Quantity::kText, 0, 0, kAnyText, "compute capability, e.g. sm_90", GPUSIM_REF(arch)},
    FieldDef{"sm_count", Quantity::kCount, 1, 65536, kAnyText, "streaming multiprocessors", GPUSIM_REF(sm_count)},
    FieldDef{"clocks.boost", Quantity::kFrequency, 1e6, 1e10, kAnyText, "maximum SM clock", GPUSIM_REF(clocks.boost_hz)},
    FieldDef{"clocks.sustained_tensor", Quantity::kFrequency, 1e6, 1e10, kAnyText, "SM clock held under tensor-heavy load", GPUSIM_REF(clocks.sustained_tensor_hz)},
    FieldDef{"clocks.sustained_other", Quantity::kFrequency, 1e6, 1e10, kAnyText, "SM clock held under other load", GPUSIM_REF(clocks.sustained_other_hz)},
    FieldDef{"sm.warp_size", Quantity::kCount, 1, 64, kAnyText, "threads per warp", GPUSIM_REF(sm.warp_size)},
    FieldDef{"sm.max_threads", Quantity::kCount, 1, 65536, kAnyText, "resident threads per SM", GPUSIM_REF(sm.max_threads)},
    FieldDef{"sm.max_warps", Quantity::kCount, 1, 4096, kAnyText, "resident warps per SM", GPUSIM_REF(sm.max_warps)},
    FieldDef{"sm.max_ctas", Quantity::kCount, 1, 1024, kAnyText, "resident CTAs per SM (CTA slots)", GPUSIM_REF(sm.max_ctas)},
    FieldDef{"sm.max_threads_per_cta", Quantity::kCount, 1, 65536, kAnyText, "largest block", GPUSIM_REF(sm.max_threads_per_cta)},
    FieldDef{"sm.sub_partitions", Quantity::kCount, 1, 64, kAnyText, "warp schedulers (register file partitions)", GPUSIM_REF(sm.sub_partitions)},
    FieldDef{"sm.registers", Quantity::kCount, 1, 1 << 24, kAnyText, "32-bit registers per SM", GPUSIM_REF(sm.registers)},
    FieldDef{"sm.max_registers_per_cta", Quantity::kCount, 1, 1 << 24, kAnyText, "registers one CTA may hold", GPUSIM_REF(sm.max_registers_per_cta)},
    FieldDef{"sm.max_registers_per_thread", Quantity::kCount, 1, 1024, kAnyText, "registers one thread may hold", GPUSIM_REF(sm.max_registers_per_thread)},
    FieldDef{"sm.register_alloc_unit", Quantity::kCount, 1, 65536, kAnyText, "registers per warp are allocated in multiples of this", GPUSIM_REF(sm.register_alloc_unit)},
    FieldDef{"sm.shared_memory", Quantity::kBytes, 0, kGiB, kAnyText, "shared memory per SM at the largest carveout", GPUSIM_REF(sm.shared_memory)},
    FieldDef{"sm.shared_memory_per_cta", Quantity::kBytes, 0, kGiB, kAnyText, "largest shared memory of one CTA (opt-in)", GPUSIM_REF(sm.shared_memory_per_cta)},
    FieldDef{"sm.shared_memory_reserved_per_cta", Quantity::kBytes, 0, kMiB, kAnyText, "shared memory the driver reserves per CTA", GPUSIM_REF(sm.shared_memory_reserved_per_cta)},
    FieldDef{"sm.shared_memory_alloc_unit", Quantity::kBytes, 1, kMiB, kAnyText, "shared memory allocation granularity", GPUSIM_REF(sm.shared_memory_alloc_unit)},
    FieldDef{"sm.l1_size", Quantity::kBytes, 0, kGiB, kAnyText, "unified L1 / shared memory per SM", GPUSIM_REF(sm.l1_size)},
    FieldDef{"sm.max_inflight_bytes", Quantity::kBytes, 1, kGiB, kAnyText, "DRAM-miss bytes one SM keeps outstanding (Little's law caps its DRAM bandwidth)", GPUSIM_REF(sm.max_inflight_bytes)},
    FieldDef{"throughput.tensor_fp16", Quantity::kFlopsPerCycle, 0, 1e7, kAnyText, "dense fp16 tensor FLOPs per SM per clock, fp32 accumulate", GPUSIM_REF(throughput.tensor_fp16)},
    FieldDef{"throughput.tensor_fp16_f16acc", Quantity::kFlopsPerCycle, 0, 1e7, kAnyText, "dense fp16 tensor FLOPs per SM per clock, fp16 accumulate", GPUSIM_REF(throughput.tensor_fp16_f16acc)},
    FieldDef{"throughput.tensor_bf16", Quantity::kFlopsPerCycle, 0, 1e7, kAnyText, "dense bf16 tensor FLOPs per SM per clock, fp32 accumulate", GPUSIM_REF(throughput.tensor_bf16)},
    FieldDef{"throughput.tensor_tf32", Quantity::kFlopsPerCycle, 0, 1e7, kAnyText, "dense tf32 tensor FLOPs per SM per clock", GPUSIM_REF(throughput.tensor_tf32)},
    FieldDef{"throughput.tensor_fp8", Quantity::kFlopsPerCycle, 0, 1e7, kAnyText, "dense fp8 tensor FLOPs per SM per clock, fp32 accumulate (0: none)", GPUSIM_REF(throughput.tensor_fp8)},
    FieldDef{"throughput.fp32", Quantity::kFlopsPerCycle, 1, 1e7, kAnyText, "FP32 FLOPs per SM per clock on CUDA cores", GPUSIM_REF(throughput.fp32)},
    FieldDef{"throughput.sfu", Quantity::kOpsPerCycle, 1, 1e6, kAnyText, "special-function ops per SM per clock", GPUSIM_REF(throughput.sfu)},
    FieldDef{"throughput.mma_sync_share", Quantity::kFraction, 0.01, 1, kAnyText, "share of the tensor rate warp-level mma.sync GEMM kernels reach (1 where it is the native path)", GPUSIM_REF(throughput.mma_sync_share)},
    FieldDef{"throughput.mma_sync_cp_async_share", Quantity::kFraction, 0.01, 1, kAnyText, "share of the tensor rate multistage (cp.async) mma.sync GEMM kernels of 16-bit operands reach (1 where it is the native path)", GPUSIM_REF(throughput.mma_sync_cp_async_share)},
    FieldDef{"throughput.mma_sync_pipelined_share", Quantity::kFraction, 0.01, 1, kAnyText, "share of the tensor rate pipelined mma.sync kernels (FlashAttention-2) reach (1 where it is the native path)", GPUSIM_REF(throughput.mma_sync_pipelined_share)},
    FieldDef{"l2.size", Quantity::kBytes, 0, 64 * kGiB, kAnyText, "L2 cache capacity", GPUSIM_REF(l2.size)},
    FieldDef{"l2.partitions", Quantity::kCount, 1, 64, kAnyText, "L2 partitions", GPUSIM_REF(l2.partitions)},
    FieldDef{"l2.bandwidth", Quantity::kBandwidth, 1e9, kBig, kAnyText, "L2 hit bandwidth, whole chip", GPUSIM_REF(l2.bandwidth)},
    FieldDef{"l2.hit_latency", Quantity::kDuration, 1e-9, 1e-4, kAnyText, "L2 hit load-to-use latency", GPUSIM_REF(l2.hit_latency)},
    FieldDef{"l2.max_dirty_share", Quantity::kFraction, 0, 1, kAnyText, "share of the L2 it keeps dirty at most: stores stay in L2 as dirty lines, written to DRAM when evicted", GPUSIM_REF(l2.max_dirty_share)},
    FieldDef{"l2.reuse_share", Quantity::kFraction, 0.01, 4, kAnyText, "stack distance, as a share of the L2's size, after which a later kernel still finds half of what a kernel left in L2", GPUSIM_REF(l2.reuse_share)},
    FieldDef{"l2.reuse_steepness", Quantity::kNumber, 1, 64, kAnyText, "how sharply the share a later kernel finds falls around that distance: 1 / (1 + (distance / (reuse_share x size))^steepness)", GPUSIM_REF(l2.reuse_steepness)},
    FieldDef{"dram.kind", Quantity::kText, 0, 0, kDramKinds, "memory technology", GPUSIM_REF(dram.kind)},
    FieldDef{"dram.bus_width_bits", Quantity::kCount, 1, 65536, kAnyText, "memory interface width in bits", GPUSIM_REF(dram.bus_width_bits)},
    FieldDef{"dram.bandwidth", Quantity::kBandwidth, 1e9, kBig, kAnyText, "peak DRAM bandwidth (datasheet)", GPUSIM_REF(dram.bandwidth)},
    FieldDef{"dram.efficiency", Quantity::kFraction, 0.05, 1, kAnyText, "fraction of the peak a large copy reaches (read + write)", GPUSIM_REF(dram.efficiency)},
    FieldDef{"dram.latency", Quantity::kDuration, 1e-9, 1e-4, kAnyText, "DRAM load-to-use latency", GPUSIM_REF(dram.latency)},
    FieldDef{"dram.first_miss_interval", Quantity::kDuration, 0, 1e-6, kAnyText, "when the CTAs of a wave all start with a miss, each SM's first miss arrives this much after the previous SM's", GPUSIM_REF(dram.first_miss_interval)},
    FieldDef{"dram.activation_rate", Quantity::kFrequency, 0, 1e12, kAnyText, "row activations a second over all channels: traffic in short runs (a tile's rows one pipeline stage at a time) moves at most run bytes x this (0: no limit)", GPUSIM_REF(dram.activation_rate)},
    FieldDef{"dram.capacity", Quantity::kBytes, kMiB, kBig, kAnyText, "device memory", GPUSIM_REF(dram.capacity)},
    FieldDef{"launch.graph_gap", Quantity::kDuration, 0, 1, kAnyText, "gap between dependent kernels in a CUDA graph replay", GPUSIM_REF(launch.graph_gap)},
    FieldDef{"launch.eager_gap", Quantity::kDuration, 0, 1, kAnyText, "time per kernel launched eagerly from PyTorch", GPUSIM_REF(launch.eager_gap)},
    FieldDef{"launch.kernel_overhead", Quantity::kDuration, 0, 1e-3, kAnyText, "device time of a kernel beyond its CTAs' work (launch, drain)", GPUSIM_REF(launch.kernel_overhead)},
    FieldDef{"launch.cta_interval", Quantity::kDuration, 0, 1e-5, kAnyText, "the block scheduler starts at most one CTA per SM per this interval", GPUSIM_REF(launch.cta_interval)},
    FieldDef{"launch.cluster_dispatch_interval", Quantity::kDuration, 0, 1e-6, kAnyText, "a kernel launched with cluster dimensions has its clusters started one at a time, this far apart, chip-wide", GPUSIM_REF(launch.cluster_dispatch_interval)},
    FieldDef{"host.model_kernel_issue", Quantity::kDuration, 0, 1e-2, kAnyText, "host time per kernel a model's eager forward launches (Python, dispatcher, allocator)", GPUSIM_REF(host.model_kernel_issue)},
    FieldDef{"host.forward_fixed", Quantity::kDuration, 0, 1, kAnyText, "host time of a model's eager forward before its first launch", GPUSIM_REF(host.forward_fixed)},
    FieldDef{"host.backward_kernel_issue", Quantity::kDuration, 0, 1e-2, kAnyText, "host time per kernel autograd's engine launches in a training step's backward", GPUSIM_REF(host.backward_kernel_issue)},
    FieldDef{"host.optimizer_kernel_issue", Quantity::kDuration, 0, 1e-2, kAnyText, "host time per kernel a torch.optim step launches", GPUSIM_REF(host.optimizer_kernel_issue)},
    // A system file's section (hw/system_spec.h); a chip alone is one GPU without links.
    FieldDef{"system.gpus", Quantity::kCount, 1, 1024, kAnyText, "GPUs in one node", GPUSIM_REF(system.gpus), true},
    FieldDef{"system.nodes", Quantity::kCount, 1, 65536, kAnyText, "nodes, joined by system.network", GPUSIM_REF(system.nodes), true},
    FieldDef{"system.interconnect.kind", Quantity::kText, 0, 0, kFabrics, "the links between a node's GPUs: none, nvswitch, nvlink (point-to-point pairs) or pcie", GPUSIM_REF(system.interconnect.kind), true},
    FieldDef{"system.interconnect.bandwidth", Quantity::kBandwidth, 0, kBig, kAnyText, "bytes/s one GPU sends into the fabric, one direction (pcie: from generation and lanes when not given)", GPUSIM_REF(system.interconnect.bandwidth), true},
    FieldDef{"system.interconnect.efficiency", Quantity::kFraction, 0, 1, kAnyText, "share of that bandwidth NCCL's transfers reach", GPUSIM_REF(system.interconnect.efficiency), true},
    FieldDef{"system.interconnect.latency", Quantity::kDuration, 0, 1e-3, kAnyText, "one hop's latency, NCCL's LL protocol", GPUSIM_REF(system.interconnect.latency), true},
    FieldDef{"system.interconnect.call_latency", Quantity::kDuration, 0, 1e-3, kAnyText, "time every collective kernel adds beyond its hops and bytes (default 0)", GPUSIM_REF(system.interconnect.call_latency), true},
    FieldDef{"system.interconnect.nvls", Quantity::kText, 0, 0, kOnOff, "NVLink SHARP (switch multicast and reduction) for all-reduce: on or off", GPUSIM_REF(system.interconnect.nvls), true},
    FieldDef{"system.interconnect.channels", Quantity::kCount, 0, 1024, kAnyText, "CTAs (NCCL channels) a large collective runs on each GPU", GPUSIM_REF(system.interconnect.channels), true},
    FieldDef{"system.interconnect.p2p_channels", Quantity::kCount, 0, 1024, kAnyText, "CTAs a large send/recv or all-to-all runs on each GPU", GPUSIM_REF(system.interconnect.p2p_channels), true},
    FieldDef{"system.interconnect.pairs", Quantity::kText, 0, 0, kAnyText, "nvlink only: the linked GPU pairs, e.g. 0-1,1-2,2-3,3-0", GPUSIM_REF(system.interconnect.pairs), true},
    FieldDef{"system.interconnect.pcie_generation", Quantity::kCount, 0, 6, kAnyText, "pcie only: PCIe generation (3-6)", GPUSIM_REF(system.interconnect.pcie_generation), true},
    FieldDef{"system.interconnect.pcie_lanes", Quantity::kCount, 0, 32, kAnyText, "pcie only: lanes per GPU", GPUSIM_REF(system.interconnect.pcie_lanes), true},
    FieldDef{"system.interconnect.pcie_path", Quantity::kText, 0, 0, kPciePaths, "pcie only: GPUs reach each other through a PCIe switch or through the host's root complex (host_bridge)", GPUSIM_REF(system.interconnect.pcie_path), true},
    FieldDef{"system.network.bandwidth", Quantity::kBandwidth, 0, kBig, kAnyText, "bytes/s per GPU between nodes, one direction (its NIC)", GPUSIM_REF(system.network.bandwidth), true},
    FieldDef{"system.network.efficiency", Quantity::kFraction, 0, 1, kAnyText, "share of the network bandwidth NCCL reaches", GPUSIM_REF(system.network.efficiency), true},
    FieldDef{"system.network.latency", Quantity::kDuration, 0, 1e-2, kAnyText, "one network hop's latency, NCCL's LL protocol", GPUSIM_REF(system.network.latency), true},
};

#undef GPUSIM_REF

std::string format_bound(double v, Quantity q) {
  return q == Quantity::kCount || q == Quantity::kFraction ? fmt::format("{}", static_cast<long long>(v)) : format_quantity(v, q);
}

}  // namespace

std::span<const FieldDef> hardware_fields() { return kFields; }

const FieldDef* find_field(std::string_view path) {
  for (const auto& f : kFields) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::string assign_field(HardwareSpec& spec, const FieldDef& field, std::string_view text) {
  const FieldRef ref = field.ref(spec);
  if (field.quantity == Quantity::kText) {
    std::string word(text);
    if (word.empty()) return "empty value; expected a word";
    if (!field.choices.empty()) {
      bool allowed = false;
      std::string list;
      for (const auto c : field.choices) {
        allowed = allowed || c == word;
        list += (list.empty() ? "" : ", ") + std::string(c);
      }
      if (!allowed) return fmt::format("'{}' is not one of: {}", word, list);
    }
    *std::get<std::string*>(ref) = std::move(word);
    return {};
  }
  const ParsedQuantity parsed = parse_quantity(text, field.quantity);
  if (!parsed.ok()) return parsed.error;
  const double v = parsed.value;
  if (v < field.min || v > field.max) {
    return fmt::format("{} is out of range: it must be between {} and {}",
                       format_bound(v, field.quantity), format_bound(field.min, field.quantity),
                       format_bound(field.max, field.quantity));
  }
  std::visit(
      [v](auto* target) {
        using T = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<T, int> || std::is_same_v<T, std::int64_t>) {
          *target = static_cast<T>(v);
        } else if constexpr (std::is_same_v<T, double>) {
          *target = v;
        } else if constexpr (std::is_same_v<T, sim::Time>) {
          *target = sim::Time::from_seconds(v);
        }
      },
      ref);
  return {};
}

std::string format_field(const HardwareSpec& spec, const FieldDef& field) {
  // The table's accessors take a mutable spec; reading through them changes nothing.
  const FieldRef ref = field.ref(const_cast<HardwareSpec&>(spec));
  return std::visit(
      [&field](auto* value) -> std::string {
        using T = std::remove_pointer_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return *value;
        } else if constexpr (std::is_same_v<T, sim::Time>) {
          return format_quantity(value->seconds(), field.quantity);
        } else {
          return format_quantity(static_cast<double>(*value), field.quantity);
        }
      },
      ref);
}

namespace {

// A system of several GPUs needs its links described; a chip alone needs none.
template <typename Require>
void check_system(const SystemSpec& y, Require& require) {
  const InterconnectSpec& ic = y.interconnect;
  const bool fabric = ic.kind != "none";
  require(!(y.gpus > 1 && !fabric), "system.interconnect.kind",
          fmt::format("a node of {} GPUs needs its interconnect: nvswitch, nvlink or pcie", y.gpus));
  if (fabric) {
    require(ic.bandwidth > 0, "system.interconnect.bandwidth",
            ic.kind == "pcie" ? "missing: give the bandwidth, or pcie_generation and pcie_lanes"
                              : "missing: the bandwidth one GPU sends into the fabric");
    require(ic.efficiency > 0, "system.interconnect.efficiency", "missing or 0: the share of the bandwidth NCCL reaches");
    require(ic.channels >= 1, "system.interconnect.channels", "missing or 0: the CTAs a large collective runs on each GPU");
    require(ic.p2p_channels >= 1, "system.interconnect.p2p_channels", "missing or 0: the CTAs a large send/recv runs on each GPU");
  }
  require(ic.nvls == "off" || ic.kind == "nvswitch", "system.interconnect.nvls",
          "NVLink SHARP needs NVSwitches (interconnect.kind: nvswitch)");
  require(ic.pcie_path == "switch" || ic.kind == "pcie", "system.interconnect.pcie_path", "is for pcie interconnects only");
  if (ic.kind == "nvlink") {
    const auto pairs = y.nvlink_pairs();
    require(!pairs.empty(), "system.interconnect.pairs",
            fmt::format("'{}' is not a list of linked GPU pairs such as 0-1,1-2,2-3,3-0", ic.pairs));
    for (const auto& [a, b] : pairs) {
      require(a >= 0 && b >= 0 && a < y.gpus && b < y.gpus && a != b, "system.interconnect.pairs",
              fmt::format("pair {}-{} names a GPU outside 0..{} (or links a GPU to itself)", a, b, y.gpus - 1));
    }
  } else {
    require(ic.pairs.empty(), "system.interconnect.pairs", "is for nvlink interconnects only");
  }
  if (y.nodes > 1) {
    require(y.network.bandwidth > 0, "system.network.bandwidth",
            fmt::format("missing: {} nodes need the network between them", y.nodes));
    require(y.network.efficiency > 0, "system.network.efficiency", "missing or 0: the share of the network bandwidth NCCL reaches");
  }
}

}  // namespace

void complete_system(HardwareSpec& spec) {
  InterconnectSpec& ic = spec.system.interconnect;
  if (ic.kind == "pcie" && ic.bandwidth <= 0) ic.bandwidth = pcie_bandwidth(ic.pcie_generation, ic.pcie_lanes);
}

std::vector<Violation> check_consistency(const HardwareSpec& s) {
  std::vector<Violation> out;
  auto require = [&out](bool ok, std::string key, std::string message) {
    if (!ok) out.push_back({std::move(key), std::move(message)});
  };
  const SmSpec& sm = s.sm;
  const bool arch_ok = s.arch.size() > 3 && s.arch.rfind("sm_", 0) == 0 &&
                       std::isdigit(static_cast<unsigned char>(s.arch[3]));
  require(arch_ok, "arch", fmt::format("'{}' is not a compute capability such as sm_90", s.arch));
  require((sm.warp_size & (sm.warp_size - 1)) == 0, "sm.warp_size",
          fmt::format("{} is not a power of two", sm.warp_size));
  require(static_cast<std::int64_t>(sm.max_warps) * sm.warp_size == sm.max_threads, "sm.max_warps",
          fmt::format("{} warps of {} threads make {} threads, but sm.max_threads is {}",
                      sm.max_warps, sm.warp_size,
                      static_cast<std::int64_t>(sm.max_warps) * sm.warp_size, sm.max_threads));
  require(sm.max_threads_per_cta <= sm.max_threads, "sm.max_threads_per_cta",
          fmt::format("a block of {} threads is larger than the SM ({} threads)",
                      sm.max_threads_per_cta, sm.max_threads));
  require(sm.max_registers_per_cta <= sm.registers, "sm.max_registers_per_cta",
          fmt::format("{} registers per CTA exceed the SM's {}", sm.max_registers_per_cta,
                      sm.registers));
  require(sm.registers % sm.sub_partitions == 0, "sm.registers",
          fmt::format("{} registers do not split evenly over {} sub-partitions", sm.registers,
                      sm.sub_partitions));
  require(sm.register_alloc_unit <= sm.registers / sm.sub_partitions, "sm.register_alloc_unit",
          fmt::format("an allocation unit of {} registers exceeds a sub-partition's {}",
                      sm.register_alloc_unit, sm.registers / sm.sub_partitions));
  require(sm.shared_memory_per_cta <= sm.shared_memory, "sm.shared_memory_per_cta",
          fmt::format("{} per CTA exceeds the SM's {}",
                      format_quantity(static_cast<double>(sm.shared_memory_per_cta), Quantity::kBytes),
                      format_quantity(static_cast<double>(sm.shared_memory), Quantity::kBytes)));
  require(sm.shared_memory <= sm.l1_size, "sm.shared_memory",
          "shared memory per SM cannot exceed the unified L1/shared capacity (sm.l1_size)");
  require(s.clocks.sustained_tensor_hz <= s.clocks.boost_hz, "clocks.sustained_tensor",
          "a sustained clock cannot exceed clocks.boost");
  require(s.clocks.sustained_other_hz <= s.clocks.boost_hz, "clocks.sustained_other",
          "a sustained clock cannot exceed clocks.boost");
  check_system(s.system, require);
  return out;
}

}  // namespace gpusim::hw
