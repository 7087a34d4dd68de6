// Collective communication as NCCL runs it (issue 19): all-reduce, all-gather, reduce-scatter,
// all-to-all and send/recv between the GPUs of a system (hw/system_spec.h), lowered to one
// kernel per GPU whose CTAs are NCCL's channels. Each channel CTA occupies an SM like any other
// kernel's (NCCL's 512-640 threads at 96 registers take an SM's register file), sends its share
// of the bytes into the GPU's links (a bandwidth the engine shares among the CTAs that send), reads
// and writes its buffers in DRAM, adds what it reduces on the FP32 pipe, and waits a fixed latency:
// NCCL's base latency plus one hop per algorithm step. A collective therefore competes with compute
// for SMs and memory bandwidth when the framework overlaps them.
//
// The algorithm and protocol are NCCL's choice by its own cost model: for each candidate (ring or
// tree; NVLS where the switch reduces; LL, LL128 or Simple) the latency plus the bytes the
// protocol puts on the wire over the link bandwidth, the fastest taken. Per-rank bytes follow the
// algorithm: a ring all-reduce sends 2(n-1)/n of the buffer from every GPU, an all-gather or
// reduce-scatter (n-1)/n, an all-to-all (n-1)/n to its peers directly, a send its message.
// Ranks are symmetric (every GPU of the group runs the same kernel at the same time), so one
// GPU's kernel stands for all of them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hw/hardware_spec.h"
#include "hw/launch.h"

namespace gpusim::models {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
enum class CollectiveAlgorithm { kRing, kTree, kNvls, kDirect };  // direct: point-to-point sends
enum class Protocol { kLL, kLL128, kSimple };

std::string_view name(Collective c);           // allreduce, allgather, reducescatter, alltoall, sendrecv
std::string_view name(CollectiveAlgorithm a);  // RING, TREE, NVLS, P2P
std::string_view name(Protocol p);             // LL, LL128, SIMPLE

struct CollectiveProblem {
  Collective kind = Collective::kAllReduce;
  // nccl-tests' size: all-reduce, each rank's buffer; all-gather, the gathered output;
  // reduce-scatter, the input before scattering; all-to-all, each rank's send buffer; send/recv,
  // the message.
  double bytes = 0;
  int ranks = 2;           // GPUs in the group
  int ranks_per_node = 2;  // of them, in one node (the group spans ranks / ranks_per_node nodes)
  hw::DType dtype = hw::DType::kBf16;
};

// How NCCL runs one collective, and what it costs each GPU.
struct CollectivePlan {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  int channels = 1;      // CTAs
  int threads = 512;     // per CTA
  int steps = 0;         // algorithm steps, each a hop's latency
  double payload_bytes = 0;  // data each GPU sends (nccl-tests' busbw counts these)
  double link_bytes = 0;     // bytes each GPU puts on its node's fabric: payload x the protocol's overhead
  double network_bytes = 0;  // of those, what each GPU's NIC carries between nodes
  double dram_read_bytes = 0, dram_write_bytes = 0;  // each GPU's buffer traffic
  double reduce_flops = 0;   // additions each GPU does (FP32 pipe)
  sim::Time latency;         // NCCL's base latency plus the steps' hop latencies
  double estimated_seconds = 0;  // NCCL's estimate that chose this plan
};

// The bus-bandwidth factor of nccl-tests: busbw = bytes / time x factor (2(n-1)/n for an
// all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for send/recv).
double bus_bandwidth_factor(Collective kind, int ranks);

// Throws ModelError when the chip has no interconnect (a system of one) or the group is larger
// than the system.
CollectivePlan plan_collective(const CollectiveProblem& p, const hw::HardwareSpec& hw);

// The plan as a launch: `channels` CTAs of NCCL's kernel (named as the profiler shows it, family
// = the collective's name), reading `input` and writing `output`.
hw::Launch collective_launch(const CollectiveProblem& p, const CollectivePlan& plan, const hw::HardwareSpec& hw,
                             const hw::TensorUse& input, const hw::TensorUse& output);
hw::Launch lower_collective(const CollectiveProblem& p, const hw::HardwareSpec& hw, const hw::TensorUse& input,
                            const hw::TensorUse& output);

}  // namespace gpusim::models
