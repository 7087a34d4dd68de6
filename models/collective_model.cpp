#include "models/collective_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "models/common.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {

enum Fabric { kNvlinkFabric, kPcieFabric, kNetFabric };

// NCCL's own tuning model (NVIDIA/nccl src/graph/tuning.cc, commit 01afd20): base latency per
// algorithm and protocol, and one hop's latency per fabric, algorithm and protocol, in us. A
// system file gives one hop's LL latency on its fabric; the other protocols' hops keep NCCL's
// ratios to it, so a what-if change of the link latency moves every protocol alike.
constexpr double kBaseLatUs[2][3] = {{4.4, 4.4, 0.0}, {3.6, 10.0, 8.4}};  // [tree, ring][LL, LL128, Simple]
constexpr double kHopLatUs[3][2][3] = {
    {{0.52, 1.2, 28}, {0.47, 1.9, 3.4}},  // NVLink: tree, ring
    {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}},    // PCIe
    {{5.0, 8.5, 50}, {2.7, 4.0, 9.6}},    // network
};
// NVLS (in-switch reduction, NCCL 2.17+): one multicast round trip through the switch.
constexpr double kNvlsBaseLatUs = 25.0;

// Bytes each protocol puts on the wire per byte of data: LL sends 8-byte lines of 4 data bytes
// and a 4-byte flag; LL128 128-byte lines with 8 bytes of flags; Simple the data alone.
constexpr double kWireBytes[3] = {2.0, 128.0 / 120.0, 1.0};
// NCCL's per-thread work thresholds (bytes) below which it runs fewer channels:
// NCCL_LL_THREAD_THRESHOLD (times the ranks for a ring), NCCL_LL128_THREAD_THRESHOLD,
// NCCL_SIMPLE_THREAD_THRESHOLD (src/include/device.h). The profiled launches agree: a 64 KiB
// all-reduce ran 4 channels on 4 H100s and 8 on 2 (validation/data/nccl_h100x{2,4}.json).
constexpr double kThreadThreshold[3] = {8, 8, 64};
// Threads per channel CTA: NCCL_MAX_NTHREADS for LL, one more warp for LL128 and Simple (as
// profiled: 512 and 544); send/recv kernels run 640 (profiled).
constexpr int kThreads[3] = {512, 544, 544};
constexpr int kP2pThreads = 640;
constexpr int kRegisters = 96;             // profiled, every NCCL kernel above
constexpr std::int64_t kSharedMemory = 103808;  // profiled, every NCCL kernel above
// Send/recv and all-to-all: a channel per this many bytes of the largest peer message (the
// profiled all-to-all of 64 KiB over 4 GPUs ran 7 CTAs, 1 MiB 28, 64 MiB the 32 of p2p_channels).
constexpr double kP2pBytesPerChannel = 8192;

int fabric_of(const hw::HardwareSpec& hw) { return hw.system.interconnect.kind == "pcie" ? kPcieFabric : kNvlinkFabric; }

// Levels of ncclGetBtree over `nodes` (its root has a single child): ceil(log2 nodes).
int tree_depth(int nodes) {
  int depth = 0;
  while ((1 << depth) < nodes) ++depth;
  return depth;
}

struct Candidate {
  CollectiveAlgorithm algorithm;
  Protocol protocol;
};

std::string type_name(hw::DType d) {
  switch (d) {
    case hw::DType::kFp32:
    case hw::DType::kTf32: return "f32";
    case hw::DType::kFp16: return "f16";
    case hw::DType::kBf16: return "bf16";
    case hw::DType::kFp8: return "f8e4m3";
  }
  return "bf16";
}

// The latency of one candidate: NCCL's base plus its hops, intra-node hops at the system's link
// latency and inter-node hops at the network's.
sim::Time candidate_latency(const hw::HardwareSpec& hw, Candidate c, int steps, int inter_steps) {
  const auto& y = hw.system;
  const int proto = static_cast<int>(c.protocol);
  if (c.algorithm == CollectiveAlgorithm::kNvls) {
    return sim::Time::from_seconds((kNvlsBaseLatUs + 2 * kHopLatUs[kNvlinkFabric][1][proto] *
                                                         y.interconnect.latency.seconds() * 1e6 /
                                                         kHopLatUs[kNvlinkFabric][1][0]) * 1e-6);
  }
  const int algo = c.algorithm == CollectiveAlgorithm::kTree ? 0 : 1;
  const int fabric = fabric_of(hw);
  const double intra_scale = y.interconnect.latency.seconds() * 1e6 / kHopLatUs[fabric][1][0];
  double intra = kHopLatUs[fabric][algo][proto] * intra_scale;
  // Through the host's root complex (no P2P between GPUs), every hop crosses PCIe twice.
  if (fabric == kPcieFabric && y.interconnect.pcie_path == "host_bridge") intra *= 2;
  const double net_scale = y.network.latency.seconds() > 0 ? y.network.latency.seconds() * 1e6 / kHopLatUs[kNetFabric][1][0] : 1.0;
  const double inter = kHopLatUs[kNetFabric][algo][proto] * net_scale;
  double us = c.algorithm == CollectiveAlgorithm::kDirect ? kBaseLatUs[1][proto] : kBaseLatUs[algo][proto];
  // One hop per step: the tree's are 2 (ranks_per_node - 1) on the node's chain and twice its
  // depth between nodes (plan_candidate).
  us += (steps - inter_steps) * intra + inter_steps * inter;
  return sim::Time::from_seconds(us * 1e-6);
}

CollectivePlan plan_candidate(const CollectiveProblem& p, const hw::HardwareSpec& hw, Candidate c) {
  const auto& y = hw.system;
  const int n = p.ranks, per_node = p.ranks_per_node, nodes = n / per_node;
  const double S = p.bytes;
  const int proto = static_cast<int>(c.protocol);
  CollectivePlan plan;
  plan.algorithm = c.algorithm;
  plan.protocol = c.protocol;
  int inter_steps = 0;
  double tree_network_payload = 0;
  double in_bytes = S, out_bytes = S;  // this GPU's input and output buffers
  switch (p.kind) {
    case Collective::kAllReduce:
      if (c.algorithm == CollectiveAlgorithm::kNvls) {
        // multimem reduce-load of its 1/n (the peers' shares leave through its links) and a
        // multicast store of the result: each GPU sends the buffer once.
        plan.steps = 2;
        plan.payload_bytes = S;
      } else if (c.algorithm == CollectiveAlgorithm::kTree) {
        // Reduce up a chain or tree, broadcast down: each GPU sends the buffer up and down. The
        // node tree is ncclGetBtree's, whose root has one child: ceil(log2 nodes) levels deep.
        // NCCL's tuning.cc estimates log2i(nNodes) (the floor), a level short for other than
        // powers of two; the steps and the latency here both count the levels the tree has.
        const int depth = tree_depth(nodes);
        plan.steps = 2 * (per_node - 1) + 2 * depth;
        inter_steps = 2 * depth;
        plan.payload_bytes = 2 * S * (n - 1) / n;
        // Only the tree's edges between nodes cross the network, each once up and once down:
        // 2 (nodes - 1) S in all, over the n GPUs' NICs (the channels' trees start at different
        // GPUs of each node).
        tree_network_payload = 2 * S * (nodes - 1) / n;
      } else {
        plan.steps = 2 * (n - 1);
        inter_steps = 2 * (nodes - 1);
        plan.payload_bytes = 2 * S * (n - 1) / n;  // reduce-scatter, then all-gather, of n chunks
      }
      plan.reduce_flops = S / hw::bytes_per_element(p.dtype) * (n - 1) / n;
      break;
    case Collective::kAllGather:
      plan.steps = n - 1;
      inter_steps = nodes - 1;
      plan.payload_bytes = S * (n - 1) / n;
      in_bytes = S / n;
      break;
    case Collective::kReduceScatter:
      plan.steps = n - 1;
      inter_steps = nodes - 1;
      plan.payload_bytes = S * (n - 1) / n;
      out_bytes = S / n;
      plan.reduce_flops = S / hw::bytes_per_element(p.dtype) * (n - 1) / n;
      break;
    case Collective::kAllToAll:
      plan.steps = 1;  // every peer at once
      inter_steps = nodes > 1 ? 1 : 0;
      plan.payload_bytes = S * (n - 1) / n;
      break;
    case Collective::kSendRecv:
      plan.steps = 1;
      inter_steps = nodes > 1 ? 1 : 0;
      plan.payload_bytes = S;
      break;
  }
  plan.link_bytes = plan.payload_bytes * kWireBytes[proto];
  // Between nodes: each node's rings leave it through every GPU's NIC in turn (NCCL's channels
  // start their rings at different GPUs), so a GPU's NIC carries 1/per_node of the crossings.
  if (nodes > 1) {
    if (c.algorithm == CollectiveAlgorithm::kTree) {
      plan.network_bytes = tree_network_payload * kWireBytes[proto];
    } else if (c.algorithm == CollectiveAlgorithm::kDirect || p.kind == Collective::kAllToAll) {
      plan.network_bytes = plan.link_bytes * (n - per_node) / std::max(1, n - 1);
    } else {
      plan.network_bytes = plan.link_bytes / per_node;
    }
  }
  // Buffers: the input read and the output written; what arrives lands in a FIFO in this GPU's
  // memory (written by the peer) and is read from it.
  const double received = plan.payload_bytes;
  plan.dram_read_bytes = in_bytes + received;
  plan.dram_write_bytes = out_bytes + received;
  plan.latency = candidate_latency(hw, c, plan.steps, inter_steps);

  const bool p2p = c.algorithm == CollectiveAlgorithm::kDirect;
  const int most = p2p ? y.interconnect.p2p_channels : y.interconnect.channels;
  const double threshold = kThreadThreshold[proto] * (c.protocol == Protocol::kLL && c.algorithm == CollectiveAlgorithm::kRing ? n : 1);
  const double per_channel = p2p ? kP2pBytesPerChannel : threshold * kThreads[proto];
  plan.threads = p2p ? kP2pThreads : kThreads[proto];
  const double sized = S;
  plan.channels = static_cast<int>(std::clamp(std::floor(sized / per_channel), 1.0, static_cast<double>(most)));

  double seconds = plan.latency.seconds() + plan.link_bytes / y.link_bandwidth();
  if (plan.network_bytes > 0) seconds = std::max(seconds, plan.latency.seconds() + plan.network_bytes / y.network_bandwidth());
  plan.estimated_seconds = seconds;
  return plan;
}

}  // namespace

std::string_view name(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "allreduce";
    case Collective::kAllGather: return "allgather";
    case Collective::kReduceScatter: return "reducescatter";
    case Collective::kAllToAll: return "alltoall";
    case Collective::kSendRecv: return "sendrecv";
  }
  return "allreduce";
}

std::string_view name(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kRing: return "RING";
    case CollectiveAlgorithm::kTree: return "TREE";
    case CollectiveAlgorithm::kNvls: return "NVLS";
    case CollectiveAlgorithm::kDirect: return "P2P";
  }
  return "RING";
}

std::string_view name(Protocol p) {
  switch (p) {
    case Protocol::kLL: return "LL";
    case Protocol::kLL128: return "LL128";
    case Protocol::kSimple: return "SIMPLE";
  }
  return "SIMPLE";
}

double bus_bandwidth_factor(Collective kind, int ranks) {
  const double n = ranks;
  switch (kind) {
    case Collective::kAllReduce: return 2 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll: return (n - 1) / n;
    case Collective::kSendRecv: return 1;
  }
  return 1;
}

CollectivePlan plan_collective(const CollectiveProblem& p, const hw::HardwareSpec& hw) {
  const auto& y = hw.system;
  if (p.ranks < 2) throw ModelError(fmt::format("a {} needs at least 2 GPUs", name(p.kind)));
  if (y.interconnect.kind == "none" || y.link_bandwidth() <= 0) {
    throw ModelError(fmt::format("{} over {} GPUs: {} is one chip without an interconnect; give a system "
                                 "(--hw dgx-h100, or a file with a system: section)",
                                 name(p.kind), p.ranks, hw.name));
  }
  if (p.ranks > y.total_gpus()) {
    throw ModelError(fmt::format("{} over {} GPUs: {} has {}", name(p.kind), p.ranks, hw.name, y.total_gpus()));
  }
  if (p.ranks_per_node < 1 || p.ranks % p.ranks_per_node != 0) {
    throw ModelError(fmt::format("{} GPUs do not fill nodes of {}", p.ranks, p.ranks_per_node));
  }
  if (p.ranks > p.ranks_per_node && y.network_bandwidth() <= 0) {
    throw ModelError(fmt::format("a {} across nodes needs system.network", name(p.kind)));
  }
  if (!(p.bytes > 0)) throw ModelError(fmt::format("a {} of {} bytes", name(p.kind), p.bytes));
  std::vector<Candidate> candidates;
  const bool multi_node = p.ranks > p.ranks_per_node;
  for (const Protocol proto : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
    if (p.kind == Collective::kAllToAll || p.kind == Collective::kSendRecv) {
      if (proto != Protocol::kLL128) candidates.push_back({CollectiveAlgorithm::kDirect, proto});
      continue;
    }
    candidates.push_back({CollectiveAlgorithm::kRing, proto});
    if (p.kind == Collective::kAllReduce && multi_node && proto != Protocol::kSimple) {
      candidates.push_back({CollectiveAlgorithm::kTree, proto});
    }
  }
  if (p.kind == Collective::kAllReduce && y.interconnect.nvls == "on" && !multi_node) {
    candidates.push_back({CollectiveAlgorithm::kNvls, Protocol::kSimple});
  }
  CollectivePlan best;
  double best_seconds = std::numeric_limits<double>::infinity();
  for (const Candidate c : candidates) {
    CollectivePlan plan = plan_candidate(p, hw, c);
    if (plan.estimated_seconds < best_seconds) {
      best_seconds = plan.estimated_seconds;
      best = plan;
    }
  }
  // NCCL chose by its own tables; the kernel's per-call cost beyond them is the system's.
  best.latency = best.latency + y.interconnect.call_latency;
  best.estimated_seconds += y.interconnect.call_latency.seconds();
  return best;
}

hw::Launch collective_launch(const CollectiveProblem& p, const CollectivePlan& plan, const hw::HardwareSpec& hw,
                             const hw::TensorUse& input, const hw::TensorUse& output) {
  hw::Launch l;
  const bool p2p = plan.algorithm == CollectiveAlgorithm::kDirect;
  // NCCL 2.28's kernel names (profiled): one generic kernel per collective and type, named
  // after its first algorithm and protocol; send/recv and all-to-all share one.
  if (p2p) {
    l.name = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
  } else if (p.kind == Collective::kAllGather) {
    l.name = fmt::format("ncclDevKernel_AllGather_{}_LL(ncclDevKernelArgsStorage<4096ul>)", name(plan.algorithm));
  } else {
    l.name = fmt::format("ncclDevKernel_{}_Sum_{}_{}_LL(ncclDevKernelArgsStorage<4096ul>)",
                         p.kind == Collective::kAllReduce ? "AllReduce" : "ReduceScatter", type_name(p.dtype),
                         name(plan.algorithm));
  }
  l.family = std::string(name(p.kind));
  l.grid = {plan.channels, 1, 1};
  l.block = {plan.threads, 1, 1};
  l.regs_per_thread = kRegisters;
  // NCCL sizes its shared memory to what the device allows one CTA (sm_120: 99 KiB).
  l.smem_per_cta = std::min(kSharedMemory, hw.sm.shared_memory_per_cta);
  const double ch = plan.channels;
  hw::CtaWork w;
  w.link_bytes = plan.link_bytes / ch;
  w.network_bytes = plan.network_bytes / ch;
  w.fp32_flops = plan.reduce_flops / ch;
  w.dram_read_bytes = plan.dram_read_bytes / ch;
  w.dram_write_bytes = plan.dram_write_bytes / ch;
  w.l2_bytes = w.dram_read_bytes + w.dram_write_bytes;
  // The CTA waits on its peers' flags step after step: the algorithm's latency, during which its
  // bytes stream (NCCL pipelines chunks), so it is the CTA's fixed time beside the transfer.
  w.fixed = plan.latency;
  l.ctas.push_back({plan.channels, w});
  l.reads = {input};
  l.writes = {output};
  return l;
}

hw::Launch lower_collective(const CollectiveProblem& p, const hw::HardwareSpec& hw, const hw::TensorUse& input,
                            const hw::TensorUse& output) {
  return collective_launch(p, plan_collective(p, hw), hw, input, output);
}

}  // namespace gpusim::models
