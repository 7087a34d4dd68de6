// The system a chip sits in: how many of it, and the links between them (issue 19). A hardware
// file describes one chip; a system file is a hardware file with a `system:` section (its
// `base:` names the chip), so a system is accepted wherever `--hw` is, and a chip alone is a
// system of one GPU with no interconnect. Collective kernels (models/collective_model.h) read
// these parameters; the engine shares a GPU's link bandwidth among the CTAs that send over it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/time.h"

namespace gpusim::hw {

// The links between the GPUs of one node.
struct InterconnectSpec {
  // none (one GPU) | nvswitch (every GPU's NVLinks to switches: any pair at full bandwidth) |
  // nvlink (point-to-point NVLink between listed pairs) | pcie (through a PCIe switch or the
  // host's root complex).
  std::string kind = "none";
  double bandwidth = 0;    // bytes/s a GPU sends into the fabric, one direction (all its links)
  double efficiency = 0;   // share of it NCCL's transfers reach
  sim::Time latency;       // one hop's latency for NCCL's low-latency (LL) protocol
  // What every collective kernel takes beyond its algorithm's hops and bytes (its start with a
  // 4 KiB argument block, its work fetch, the closing flag exchange): timing only, as NCCL's own
  // choice of algorithm and protocol does not see it.
  sim::Time call_latency;
  std::string nvls = "off";  // NVLink SHARP (multicast, in-switch reduction): on | off
  int channels = 0;        // CTAs (NCCL channels) a large collective runs on each GPU
  int p2p_channels = 0;    // CTAs a large send/recv or all-to-all runs on each GPU
  std::string pairs;       // nvlink only: "0-1,1-2,2-3,3-0", the linked GPU pairs
  int pcie_generation = 0; // pcie only: 3..6, with pcie_lanes sets bandwidth when it is not given
  int pcie_lanes = 0;
  std::string pcie_path = "switch";  // pcie only: switch | host_bridge (P2P through the CPU)

  bool operator==(const InterconnectSpec&) const = default;
};

// The network between nodes (InfiniBand or RoCE), per GPU (one NIC each).
struct NetworkSpec {
  double bandwidth = 0;   // bytes/s per GPU, one direction
  double efficiency = 0;
  sim::Time latency;      // one hop, LL protocol

  bool operator==(const NetworkSpec&) const = default;
};

struct SystemSpec {
  int gpus = 1;   // GPUs in one node
  int nodes = 1;
  InterconnectSpec interconnect;
  NetworkSpec network;

  bool operator==(const SystemSpec&) const = default;

  int total_gpus() const { return gpus * nodes; }
  bool single() const { return total_gpus() == 1; }
  // Bandwidth NCCL reaches through one GPU's links into the node's fabric, bytes/s.
  double link_bandwidth() const { return interconnect.bandwidth * interconnect.efficiency; }
  double network_bandwidth() const { return network.bandwidth * network.efficiency; }
  // The linked pairs of an nvlink fabric, parsed from `pairs` (empty otherwise or when bad).
  std::vector<std::pair<int, int>> nvlink_pairs() const;
  // Whether GPUs a and b (node-local indices) are linked directly.
  bool linked(int a, int b) const;
};

// PCIe bandwidth of one direction of `lanes` lanes of `generation` (after 128b/130b encoding).
double pcie_bandwidth(int generation, int lanes);

}  // namespace gpusim::hw
