// The collectives' decompositions (validation/functional/collectives.h) run on the CPU: the
// reduced values are exact (small integers as floats), and the bytes each rank sends, the bytes
// each link carries, the additions and the steps agree with what models::plan_collective charges
// on a DGX H100 (configs/systems/dgx-h100.yaml), for the algorithm the plan chose.
//
// What agrees exactly: ring all-reduce, reduce-scatter and all-gather per rank and per link
// (every ring link carries the payload; the other links nothing), their steps and additions;
// all-to-all and send/recv per rank and link; the tree all-reduce's bytes and additions averaged
// over the ranks (the model's GPU is the mean one: in a tree the ranks differ) and its steps; the
// bytes between nodes of the ring, the all-to-all and the tree (only the tree's edges between
// nodes cross the network: 2 (nodes - 1) / n x S a GPU on average); link_bytes = payload x the
// protocol's wire factor.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <vector>

#include "hw/dtype.h"
#include "hw/hardware_loader.h"
#include "hw/preset_catalog.h"
#include "models/collective_model.h"
#include "validation/functional/collectives.h"

namespace gpusim::functional {
namespace {

using models::Collective;
using models::CollectiveAlgorithm;
using models::Protocol;

constexpr std::int64_t kBf16 = 2;

// A DGX H100 system of `nodes` nodes of 8 (NVLink SHARP off, as the preset has it: the ring).
hw::HardwareSpec dgx(int nodes) {
  const std::filesystem::path repo(GPUSIM_REPO_DIR);
  hw::HardwareSpec spec = hw::load_hardware(
      "dgx-h100",
      hw::PresetCatalog(std::vector{repo / "configs" / "hw", repo / "configs" / "systems"}));
  spec.system.nodes = nodes;
  spec.system.interconnect.nvls = "off";
  return spec;
}

double wire_factor(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return 2.0;  // 4 data bytes + a 4-byte flag per 8-byte line
    case Protocol::kLL128:
      return 128.0 / 120.0;  // 120 data bytes per 128-byte line
    case Protocol::kSimple:
      return 1.0;
  }
  return 0;
}

void expect_rel(double measured, double model, const char* what) {
  EXPECT_NEAR(measured, model, 1e-9 * std::abs(model)) << what;
}

// Small integers, so that any order of additions is exact; rank r's element i.
float value(int r, std::int64_t i) {
  return static_cast<float>((r * 7 + i * 3) % 13 - 6);
}

RankBuffers inputs(int n, std::int64_t size) {
  RankBuffers in(static_cast<std::size_t>(n), std::vector<float>(static_cast<std::size_t>(size)));
  for (int r = 0; r < n; ++r) {
    for (std::int64_t i = 0; i < size; ++i)
      in[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] = value(r, i);
  }
  return in;
}

std::vector<float> sums(const RankBuffers& in) {
  std::vector<float> s(in.front().size(), 0.0f);
  for (const auto& b : in) {
    for (std::size_t i = 0; i < s.size(); ++i) s[i] += b[i];
  }
  return s;
}

std::vector<float> slice(const std::vector<float>& v, std::int64_t begin, std::int64_t end) {
  return {v.begin() + begin, v.begin() + end};
}

// Only the ring's links r -> r + 1 carry bytes, each `bytes` in `steps` steps.
void expect_ring_links(const CollectiveRun& run, double bytes, int steps) {
  const int n = run.ranks;
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (d == (s + 1) % n) {
        EXPECT_EQ(static_cast<double>(run.link_bytes(s, d)), bytes) << s << " -> " << d;
        EXPECT_EQ(run.link_steps(s, d), steps) << s << " -> " << d;
      } else {
        EXPECT_EQ(run.link_bytes(s, d), 0) << s << " -> " << d;
      }
    }
  }
}

// The problem with its bytes rounded down to whole elements of `granule(channels)`, the plan's
// channel count for them (a smaller size may plan fewer channels: round again).
struct Fitted {
  models::CollectiveProblem problem;
  models::CollectivePlan plan;
  std::int64_t elements = 0;  // the problem's bytes in elements
};
template <class Granule>
Fitted fit(models::CollectiveProblem p, const hw::HardwareSpec& hw, const Granule& granule) {
  const std::int64_t elt = hw::bytes_per_element(p.dtype);
  for (;;) {
    const models::CollectivePlan plan = models::plan_collective(p, hw);
    const std::int64_t g = granule(plan.channels);
    const std::int64_t elements = static_cast<std::int64_t>(p.bytes) / elt / g * g;
    if (static_cast<double>(elements * elt) == p.bytes) return {p, plan, elements};
    p.bytes = static_cast<double>(elements * elt);
  }
}

// --- values and counts of the decompositions alone ---

TEST(CollectivesFunctional, RingAllReduceSumsExactly) {
  for (const int n : {2, 3, 4, 8}) {
    for (const int channels : {1, 2, 5}) {
      for (const std::int64_t size : {std::int64_t{n} * channels * 6, std::int64_t{37}}) {
        SCOPED_TRACE(::testing::Message()
                     << "n " << n << " channels " << channels << " size " << size);
        const RankBuffers in = inputs(n, size);
        const CollectiveRun run = ring_all_reduce(in, kBf16, channels);
        const std::vector<float> want = sums(in);
        for (int r = 0; r < n; ++r)
          EXPECT_EQ(run.buffers[static_cast<std::size_t>(r)], want) << "rank " << r;
        EXPECT_EQ(run.steps, 2 * (n - 1));
        // Every element crosses n - 1 links while reduced and n - 1 more while gathered.
        EXPECT_EQ(run.total_bytes_sent(), 2 * (n - 1) * size * kBf16);
        EXPECT_EQ(run.total_additions(), (n - 1) * size);
        if (size % (n * channels) == 0) {
          for (const RankTraffic& t : run.per_rank) {
            EXPECT_EQ(t.bytes_sent, 2 * (n - 1) * size / n * kBf16);
            EXPECT_EQ(t.bytes_received, t.bytes_sent);
            EXPECT_EQ(t.additions, (n - 1) * size / n);
            EXPECT_EQ(t.steps_sending, 2 * (n - 1));
          }
          expect_ring_links(run, static_cast<double>(2 * (n - 1) * size / n * kBf16), 2 * (n - 1));
        }
      }
    }
  }
}

TEST(CollectivesFunctional, RingReduceScatterAndAllGatherExactly) {
  for (const int n : {2, 3, 4, 8}) {
    for (const int channels : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " channels " << channels);
      const std::int64_t block = channels * 4, size = n * block;
      // Reduce-scatter: rank r ends with block r of the sum.
      const RankBuffers in = inputs(n, size);
      const CollectiveRun rs = ring_reduce_scatter(in, kBf16, channels);
      const std::vector<float> want = sums(in);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(rs.buffers[static_cast<std::size_t>(r)], slice(want, r * block, (r + 1) * block))
            << "rank " << r;
      }
      EXPECT_EQ(rs.steps, n - 1);
      for (const RankTraffic& t : rs.per_rank) {
        EXPECT_EQ(t.bytes_sent, (n - 1) * block * kBf16);
        EXPECT_EQ(t.additions, (n - 1) * block);
        EXPECT_EQ(t.steps_sending, n - 1);
      }
      expect_ring_links(rs, static_cast<double>((n - 1) * block * kBf16), n - 1);
      // All-gather: block r of every output is rank r's input.
      const RankBuffers blocks = inputs(n, block);
      const CollectiveRun ag = ring_all_gather(blocks, kBf16, channels);
      std::vector<float> gathered;
      for (const auto& b : blocks) gathered.insert(gathered.end(), b.begin(), b.end());
      for (int r = 0; r < n; ++r)
        EXPECT_EQ(ag.buffers[static_cast<std::size_t>(r)], gathered) << "rank " << r;
      EXPECT_EQ(ag.steps, n - 1);
      EXPECT_EQ(ag.total_additions(), 0);
      for (const RankTraffic& t : ag.per_rank) EXPECT_EQ(t.bytes_sent, (n - 1) * block * kBf16);
      expect_ring_links(ag, static_cast<double>((n - 1) * block * kBf16), n - 1);
    }
  }
}

TEST(CollectivesFunctional, TreeAllReduceSumsExactly) {
  // (ranks, ranks per node): one node (a chain), nodes of one GPU, 3 nodes (NCCL's tree with a
  // root of one child, depth 2), 2 and 4 nodes.
  struct Case {
    int n, per_node, depth;  // depth: the chain's and the node tree's hops to the root
  };
  for (const Case c : {Case{4, 4, 3}, Case{8, 1, 3}, Case{6, 2, 1 + 2}, Case{16, 8, 7 + 1},
                       Case{8, 2, 1 + 2}, Case{5, 1, 3}}) {
    for (const int trees : {1, 2}) {
      SCOPED_TRACE(::testing::Message()
                   << "n " << c.n << " per node " << c.per_node << " trees " << trees);
      const std::int64_t size = 22;
      const RankBuffers in = inputs(c.n, size);
      const CollectiveRun run = tree_all_reduce(in, c.per_node, kBf16, trees);
      const std::vector<float> want = sums(in);
      for (int r = 0; r < c.n; ++r)
        EXPECT_EQ(run.buffers[static_cast<std::size_t>(r)], want) << "rank " << r;
      EXPECT_EQ(run.steps, 2 * c.depth);
      // Every rank but a root sends its partial sum up once and receives the result once.
      EXPECT_EQ(run.total_bytes_sent(), 2 * (c.n - 1) * size * kBf16);
      EXPECT_EQ(run.total_additions(), (c.n - 1) * size);
      const int nodes = c.n / c.per_node;
      EXPECT_EQ(run.inter_node_bytes(c.per_node), 2 * (nodes - 1) * size * kBf16);
    }
  }
}

TEST(CollectivesFunctional, AllToAllAndSendRecv) {
  for (const int n : {2, 3, 8}) {
    const std::int64_t chunk = 5, size = n * chunk;
    const RankBuffers in = inputs(n, size);
    const CollectiveRun run = all_to_all(in, kBf16);
    for (int j = 0; j < n; ++j) {
      std::vector<float> want;
      for (int i = 0; i < n; ++i) {
        const auto part = slice(in[static_cast<std::size_t>(i)], j * chunk, (j + 1) * chunk);
        want.insert(want.end(), part.begin(), part.end());
      }
      EXPECT_EQ(run.buffers[static_cast<std::size_t>(j)], want) << "rank " << j;
      EXPECT_EQ(run.per_rank[static_cast<std::size_t>(j)].bytes_sent, (n - 1) * chunk * kBf16);
      for (int i = 0; i < n; ++i) EXPECT_EQ(run.link_bytes(i, j), i == j ? 0 : chunk * kBf16);
    }
    EXPECT_EQ(run.steps, 1);
    EXPECT_EQ(run.total_additions(), 0);

    const CollectiveRun sr = send_recv(in, n - 1, 0, kBf16);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(sr.buffers[static_cast<std::size_t>(r)],
                in[static_cast<std::size_t>(r == 0 ? n - 1 : r)]);
      EXPECT_EQ(sr.per_rank[static_cast<std::size_t>(r)].bytes_sent, r == n - 1 ? size * kBf16 : 0);
    }
    EXPECT_EQ(sr.total_bytes_sent(), size * kBf16);
    EXPECT_EQ(sr.link_bytes(n - 1, 0), size * kBf16);
    EXPECT_EQ(sr.steps, 1);
  }
}

// --- against the model ---

// Ring all-reduce on one node, at sizes where the plan takes LL, LL128 and Simple, with the
// plan's channels: every rank sends the plan's payload, every ring link carries it, the steps and
// additions are the plan's, and link_bytes is the payload in the protocol's wire format.
TEST(CollectivesFunctional, RingAllReduceChargesAsModeled) {
  const hw::HardwareSpec hw = dgx(1);
  // The protocol does not depend on the dtype: fp32 keeps the large buffers small.
  struct Case {
    int n;
    double bytes;
    hw::DType dtype;
  };
  std::set<Protocol> seen;
  for (const Case c : {Case{2, 16 << 10, hw::DType::kBf16}, Case{2, 5 << 20, hw::DType::kFp32},
                       Case{2, 8 << 20, hw::DType::kFp32}, Case{3, 1 << 20, hw::DType::kBf16},
                       Case{4, 256 << 10, hw::DType::kBf16}, Case{4, 5 << 20, hw::DType::kFp32},
                       Case{8, 16 << 10, hw::DType::kBf16}, Case{8, 1 << 20, hw::DType::kFp16}}) {
    const int n = c.n;
    const std::int64_t elt = hw::bytes_per_element(c.dtype);
    const Fitted f = fit({Collective::kAllReduce, c.bytes, n, n, c.dtype}, hw,
                         [n](int ch) { return std::int64_t{n} * ch; });
    const models::CollectivePlan& plan = f.plan;
    SCOPED_TRACE(::testing::Message()
                 << "n " << n << " bytes " << f.problem.bytes << " " << models::name(plan.protocol)
                 << " channels " << plan.channels);
    ASSERT_EQ(plan.algorithm, CollectiveAlgorithm::kRing);
    seen.insert(plan.protocol);
    const RankBuffers in = inputs(n, f.elements);
    const CollectiveRun run = ring_all_reduce(in, elt, plan.channels);
    const std::vector<float> want = sums(in);
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(run.buffers[static_cast<std::size_t>(r)], want) << "rank " << r;
    const double S = f.problem.bytes;
    EXPECT_EQ(plan.payload_bytes, 2 * S * (n - 1) / n);
    for (const RankTraffic& t : run.per_rank) {
      expect_rel(static_cast<double>(t.bytes_sent), plan.payload_bytes, "bytes sent");
      EXPECT_EQ(static_cast<double>(t.bytes_sent), 2 * S * (n - 1) / n);
      expect_rel(static_cast<double>(t.additions), plan.reduce_flops, "additions");
      expect_rel(static_cast<double>(t.bytes_sent) * wire_factor(plan.protocol), plan.link_bytes,
                 "link bytes");
    }
    EXPECT_EQ(run.steps, plan.steps);
    expect_ring_links(run, plan.payload_bytes, plan.steps);
  }
  EXPECT_EQ(seen, (std::set<Protocol>{Protocol::kLL, Protocol::kLL128, Protocol::kSimple}));
}

TEST(CollectivesFunctional, RingReduceScatterAndAllGatherChargeAsModeled) {
  // One node, and two (the ring leaves each node once: a GPU's NIC carries 1/8 of its link bytes).
  struct Case {
    int nodes, n;
    double bytes;
    hw::DType dtype;
  };
  std::set<Protocol> seen;
  for (const Case c :
       {Case{1, 2, 64 << 10, hw::DType::kBf16}, Case{1, 8, 1 << 20, hw::DType::kBf16},
        Case{1, 2, 8 << 20, hw::DType::kFp32}, Case{1, 3, 7 << 20, hw::DType::kFp32},
        Case{2, 16, 1 << 20, hw::DType::kBf16}}) {
    const hw::HardwareSpec hw = dgx(c.nodes);
    const int n = c.n, per_node = n / c.nodes;
    const std::int64_t elt = hw::bytes_per_element(c.dtype);
    for (const Collective kind : {Collective::kReduceScatter, Collective::kAllGather}) {
      const Fitted f = fit({kind, c.bytes, n, per_node, c.dtype}, hw,
                           [n](int ch) { return std::int64_t{n} * ch; });
      const models::CollectivePlan& plan = f.plan;
      SCOPED_TRACE(::testing::Message()
                   << models::name(kind) << " n " << n << " bytes " << f.problem.bytes << " "
                   << models::name(plan.protocol) << " channels " << plan.channels);
      ASSERT_EQ(plan.algorithm, CollectiveAlgorithm::kRing);
      seen.insert(plan.protocol);
      const std::int64_t block = f.elements / n;
      const CollectiveRun run = kind == Collective::kReduceScatter
                                    ? ring_reduce_scatter(inputs(n, f.elements), elt, plan.channels)
                                    : ring_all_gather(inputs(n, block), elt, plan.channels);
      const double S = f.problem.bytes;
      EXPECT_EQ(plan.payload_bytes, S * (n - 1) / n);
      for (const RankTraffic& t : run.per_rank) {
        expect_rel(static_cast<double>(t.bytes_sent), plan.payload_bytes, "bytes sent");
        EXPECT_EQ(t.bytes_sent, (n - 1) * block * elt);
        expect_rel(static_cast<double>(t.additions), plan.reduce_flops, "additions");
        expect_rel(static_cast<double>(t.bytes_sent) * wire_factor(plan.protocol), plan.link_bytes,
                   "link bytes");
      }
      EXPECT_EQ(run.steps, plan.steps);
      expect_ring_links(run, plan.payload_bytes, plan.steps);
      const double network_per_gpu = static_cast<double>(run.inter_node_bytes(per_node)) / n;
      expect_rel(network_per_gpu * wire_factor(plan.protocol), plan.network_bytes, "network bytes");
      if (c.nodes > 1) {
        EXPECT_EQ(network_per_gpu, plan.payload_bytes / per_node);
      }
    }
  }
  EXPECT_EQ(seen, (std::set<Protocol>{Protocol::kLL, Protocol::kLL128, Protocol::kSimple}));
}

TEST(CollectivesFunctional, AllToAllAndSendRecvChargeAsModeled) {
  std::set<Protocol> seen;
  for (const int nodes : {1, 2}) {
    const hw::HardwareSpec hw = dgx(nodes);
    // The largest (Simple) on one node only, to keep the buffers small.
    for (const double bytes : {64.0 * 1024, 1.0 * 1024 * 1024, 4.0 * 1024 * 1024}) {
      if (nodes > 1 && bytes > 1 << 20) continue;
      const int n = 8 * nodes, per_node = 8;
      const Fitted f = fit({Collective::kAllToAll, bytes, n, per_node, hw::DType::kFp32}, hw,
                           [n](int) { return std::int64_t{n}; });
      const models::CollectivePlan& plan = f.plan;
      SCOPED_TRACE(::testing::Message() << "all-to-all n " << n << " bytes " << f.problem.bytes
                                        << " " << models::name(plan.protocol));
      ASSERT_EQ(plan.algorithm, CollectiveAlgorithm::kDirect);
      seen.insert(plan.protocol);
      const CollectiveRun run = all_to_all(inputs(n, f.elements), 4);
      const double S = f.problem.bytes;
      EXPECT_EQ(plan.payload_bytes, S * (n - 1) / n);
      for (const RankTraffic& t : run.per_rank) {
        expect_rel(static_cast<double>(t.bytes_sent), plan.payload_bytes, "bytes sent");
        expect_rel(static_cast<double>(t.bytes_sent) * wire_factor(plan.protocol), plan.link_bytes,
                   "link bytes");
      }
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j)
          EXPECT_EQ(static_cast<double>(run.link_bytes(i, j)), i == j ? 0.0 : S / n);
      }
      EXPECT_EQ(run.steps, plan.steps);
      // Each GPU's NIC carries its chunks for the other nodes' ranks.
      const double network_per_gpu = static_cast<double>(run.inter_node_bytes(per_node)) / n;
      EXPECT_EQ(network_per_gpu, S * (n - per_node) / n);
      expect_rel(network_per_gpu * wire_factor(plan.protocol), plan.network_bytes, "network bytes");
    }
  }
  EXPECT_EQ(seen, (std::set<Protocol>{Protocol::kLL, Protocol::kSimple}));  // P2P has no LL128
  const hw::HardwareSpec hw = dgx(1);
  for (const double bytes : {4.0 * 1024, 1.0 * 1024 * 1024, 4.0 * 1024 * 1024}) {
    const models::CollectivePlan plan =
        models::plan_collective({Collective::kSendRecv, bytes, 2, 2, hw::DType::kBf16}, hw);
    SCOPED_TRACE(::testing::Message()
                 << "send/recv bytes " << bytes << " " << models::name(plan.protocol));
    ASSERT_EQ(plan.algorithm, CollectiveAlgorithm::kDirect);
    const CollectiveRun run =
        send_recv(inputs(2, static_cast<std::int64_t>(bytes) / kBf16), 0, 1, kBf16);
    EXPECT_EQ(plan.payload_bytes, bytes);
    expect_rel(static_cast<double>(run.per_rank[0].bytes_sent), plan.payload_bytes, "bytes sent");
    EXPECT_EQ(run.per_rank[1].bytes_sent, 0);
    EXPECT_EQ(static_cast<double>(run.link_bytes(0, 1)), bytes);
    expect_rel(static_cast<double>(run.per_rank[0].bytes_sent) * wire_factor(plan.protocol),
               plan.link_bytes, "link bytes");
    EXPECT_EQ(run.steps, plan.steps);
  }
}

// Across nodes the plan takes the tree (LL, LL128): its payload and additions are the mean
// rank's, its steps the chain's and the node tree's depth both ways.
TEST(CollectivesFunctional, TreeAllReduceChargesAsModeledOnAverage) {
  struct Case {
    int nodes, n, per_node;
    double bytes;
  };
  std::set<Protocol> seen;
  for (const Case c : {Case{2, 16, 8, 256 << 10}, Case{4, 32, 8, 64 << 10}, Case{4, 8, 2, 1 << 20},
                       Case{2, 4, 2, 2 << 20}, Case{3, 24, 8, 256 << 10}}) {
    const hw::HardwareSpec hw = dgx(c.nodes);
    const int n = c.n;
    const Fitted f = fit({Collective::kAllReduce, c.bytes, n, c.per_node, hw::DType::kBf16}, hw,
                         [n](int) { return std::int64_t{2} * n; });
    const models::CollectivePlan& plan = f.plan;
    SCOPED_TRACE(::testing::Message() << "n " << n << " per node " << c.per_node << " bytes "
                                      << f.problem.bytes << " " << models::name(plan.protocol));
    ASSERT_EQ(plan.algorithm, CollectiveAlgorithm::kTree);
    seen.insert(plan.protocol);
    const RankBuffers in = inputs(n, f.elements);
    const CollectiveRun run = tree_all_reduce(in, c.per_node, kBf16, 2);
    const std::vector<float> want = sums(in);
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(run.buffers[static_cast<std::size_t>(r)], want) << "rank " << r;
    const double S = f.problem.bytes;
    const double mean_sent = static_cast<double>(run.total_bytes_sent()) / n;
    expect_rel(mean_sent, plan.payload_bytes, "mean bytes sent");
    EXPECT_EQ(mean_sent, 2 * S * (n - 1) / n);
    expect_rel(static_cast<double>(run.total_additions()) / n, plan.reduce_flops, "mean additions");
    expect_rel(mean_sent * wire_factor(plan.protocol), plan.link_bytes, "link bytes");
    EXPECT_EQ(run.steps, plan.steps);
    // Between nodes only the node tree's edges carry data, up once and down once.
    const int nodes = n / c.per_node;
    const double network_per_gpu = static_cast<double>(run.inter_node_bytes(c.per_node)) / n;
    EXPECT_EQ(network_per_gpu, 2 * S * (nodes - 1) / n);
    expect_rel(network_per_gpu * wire_factor(plan.protocol), plan.network_bytes, "network bytes");
  }
  EXPECT_EQ(seen, (std::set<Protocol>{Protocol::kLL, Protocol::kLL128}));
}

}  // namespace
}  // namespace gpusim::functional
