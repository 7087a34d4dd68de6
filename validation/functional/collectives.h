// Collectives as NCCL decomposes them (issue 19), run on the CPU: N ranks, each with its own
// buffer, exchanging chunks step by step, so that the reduced values can be checked and the
// bytes each directed link carries, the bytes each rank sends and the additions it performs can
// be compared with what models/collective_model.h charges.
//
// Decompositions (rank r's ring neighbour is r + 1 mod N; ranks are node-major, so a ring over
// several nodes leaves each node once):
//  * ring all-reduce: a reduce-scatter over N chunks (N-1 steps; at step s rank r sends chunk
//    r - s to r + 1, which adds it into its own) then an all-gather (N-1 steps; the reduced
//    chunks travel on around the ring and are copied). With C channels each channel takes a
//    contiguous 1/C of the buffer and runs its own ring on it, all in the same steps.
//  * ring reduce-scatter: N-1 steps; rank r ends with the sum of block r (input block r of every
//    rank), each block split among the channels.
//  * ring all-gather: N-1 steps; rank r's input lands in block r of every rank's output.
//  * tree all-reduce: each node's ranks form a chain to the node's first rank, the nodes NCCL's
//    binary tree (ncclGetBtree; depth ceil(log2 nodes)). Up the tree each rank adds its
//    children's partial sums (in child order) and sends the result to its parent once all its
//    children have; then the root's result goes down, one level a step. With two trees (NCCL's
//    double binary tree, ncclGetDtree: the second mirrored or shifted) each carries half the
//    buffer.
//  * all-to-all: direct sends in one step; rank i's chunk j lands in rank j's block i.
//  * send/recv: rank a's buffer replaces rank b's in one step.
// Bytes count elements times `elt_bytes` (the modeled dtype's size); the data are floats.
// Within a step the ranks run in parallel (tbb::parallel_for): each sender first copies what it
// sends into its own wire buffer, then each receiver reads its senders' wires and writes only its
// own buffer and counters, adding contributions in a fixed order, so results do not depend on
// the schedule.
#pragma once

#include <cstdint>
#include <vector>

namespace gpusim::functional {

using RankBuffers = std::vector<std::vector<float>>;  // one buffer per rank

struct RankTraffic {
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
  std::int64_t additions = 0;  // element additions (the reduction's FP32 FLOPs)
  int steps_sending = 0;       // steps in which the rank sent something

  bool operator==(const RankTraffic&) const = default;
};

struct CollectiveRun {
  int ranks = 0;
  int steps = 0;        // algorithm steps: rounds in which the ranks send at once
  RankBuffers buffers;  // each rank's output
  std::vector<RankTraffic> per_rank;
  std::vector<std::int64_t> link_bytes_by_pair;  // [src * ranks + dst]
  std::vector<int> link_steps_by_pair;           // steps in which src sent to dst

  std::int64_t link_bytes(int src, int dst) const;
  int link_steps(int src, int dst) const;
  std::int64_t total_bytes_sent() const;
  std::int64_t total_additions() const;
  // Bytes on links between nodes of `ranks_per_node` ranks (node-major numbering).
  std::int64_t inter_node_bytes(int ranks_per_node) const;
};

// Every rank's buffer must have the same size. Ring chunks are the even split
// [size * i / parts, size * (i + 1) / parts); sizes divisible by ranks x channels give every
// rank and link the same bytes.
CollectiveRun ring_all_reduce(const RankBuffers& in, std::int64_t elt_bytes, int channels = 1);
// `in`: each rank's full input (the collective's size); output: its 1/N block, reduced.
CollectiveRun ring_reduce_scatter(const RankBuffers& in, std::int64_t elt_bytes, int channels = 1);
// `in`: each rank's 1/N block; output: the N blocks gathered (the collective's size).
CollectiveRun ring_all_gather(const RankBuffers& in, std::int64_t elt_bytes, int channels = 1);
// `trees`: 1 or 2 (the buffer split in halves between them).
CollectiveRun tree_all_reduce(const RankBuffers& in, int ranks_per_node, std::int64_t elt_bytes,
                              int trees = 1);
// `in`: each rank's send buffer of N chunks; output: its receive buffer, chunk i from rank i.
CollectiveRun all_to_all(const RankBuffers& in, std::int64_t elt_bytes);
CollectiveRun send_recv(const RankBuffers& in, int src, int dst, std::int64_t elt_bytes);

}  // namespace gpusim::functional
