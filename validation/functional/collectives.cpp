#include "validation/functional/collectives.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpusim::functional {
namespace {

using Range = std::pair<std::int64_t, std::int64_t>;  // [begin, end) of a buffer

std::size_t at(std::int64_t i) {
  return static_cast<std::size_t>(i);
}

int wrap(int i, int n) {
  return ((i % n) + n) % n;
}

// [size * i / parts, size * (i + 1) / parts), offset by `base`.
Range part(std::int64_t base, std::int64_t size, std::int64_t i, std::int64_t parts) {
  return {base + size * i / parts, base + size * (i + 1) / parts};
}

// A run of `in`'s rank count with its counters zeroed; every buffer must have one size.
CollectiveRun start(const RankBuffers& in, const char* what) {
  if (in.empty()) throw std::invalid_argument(std::string(what) + ": no ranks");
  for (const auto& b : in) {
    if (b.size() != in.front().size())
      throw std::invalid_argument(std::string(what) + ": ranks' buffers differ in size");
  }
  CollectiveRun run;
  run.ranks = static_cast<int>(in.size());
  run.per_rank.assign(in.size(), RankTraffic{});
  run.link_bytes_by_pair.assign(in.size() * in.size(), 0);
  run.link_steps_by_pair.assign(in.size() * in.size(), 0);
  return run;
}

void check_channels(int channels, const char* what) {
  if (channels < 1) throw std::invalid_argument(std::string(what) + ": channels < 1");
}

// Counts one send of `elements` from src to dst in the current step (the sender's records only).
void count_send(CollectiveRun& run, int src, int dst, std::int64_t elements,
                std::int64_t elt_bytes) {
  if (elements == 0) return;
  const std::size_t link = at(std::int64_t{src} * run.ranks + dst);
  run.per_rank[at(src)].bytes_sent += elements * elt_bytes;
  run.link_bytes_by_pair[link] += elements * elt_bytes;
  run.link_steps_by_pair[link] += 1;
}

// One ring step: every rank r sends chunk `chunk_of(r)` of every channel (range_of(channel,
// chunk)) to r + 1, which adds it into (reduce) or copies it over the same elements of its buffer.
template <class RangeOf, class ChunkOf>
void ring_step(CollectiveRun& run, RankBuffers& wire, int channels, const RangeOf& range_of,
               const ChunkOf& chunk_of, bool reduce, std::int64_t elt_bytes) {
  const int n = run.ranks;
  // Senders fill their own wires.
  tbb::parallel_for(0, n, [&](int r) {
    auto& w = wire[at(r)];
    w.clear();
    const auto& buf = run.buffers[at(r)];
    for (int ch = 0; ch < channels; ++ch) {
      const auto [b, e] = range_of(ch, chunk_of(r));
      w.insert(w.end(), buf.begin() + b, buf.begin() + e);
    }
    count_send(run, r, wrap(r + 1, n), static_cast<std::int64_t>(w.size()), elt_bytes);
    if (!w.empty()) run.per_rank[at(r)].steps_sending += 1;
  });
  // Receivers read their left neighbour's wire, element by element in order.
  tbb::parallel_for(0, n, [&](int q) {
    const int src = wrap(q - 1, n);
    const auto& w = wire[at(src)];
    auto& buf = run.buffers[at(q)];
    std::size_t pos = 0;
    for (int ch = 0; ch < channels; ++ch) {
      const auto [b, e] = range_of(ch, chunk_of(src));
      for (std::int64_t i = b; i < e; ++i) {
        if (reduce) {
          buf[at(i)] += w[pos++];
        } else {
          buf[at(i)] = w[pos++];
        }
      }
      if (reduce) run.per_rank[at(q)].additions += e - b;
    }
    run.per_rank[at(q)].bytes_received += static_cast<std::int64_t>(w.size()) * elt_bytes;
  });
  ++run.steps;
}

// Block k of a buffer of n blocks (`size` elements in all), split among the channels.
auto blocked_ranges(std::int64_t size, int n, int channels) {
  return [size, n, channels](int ch, int k) {
    const auto [b, e] = part(0, size, k, n);
    return part(b, e - b, ch, channels);
  };
}

// NCCL's binary tree over `n` (src/graph/trees.cc, ncclGetBtree): the parent of `r` clears its
// lowest set bit and sets the next (or only clears it past the end); 0 is the root, with one
// child. Its depth is ceil(log2 n).
int btree_parent(int n, int r) {
  if (r == 0) return -1;
  int bit = 1;
  while (bit < n && (bit & r) == 0) bit <<= 1;
  const int up = (r ^ bit) | (bit << 1);
  return up >= n ? (r ^ bit) : up;
}

// The double binary tree's second tree (ncclGetDtree): the first mirrored (n even) or shifted by
// one (n odd), so that the first tree's leaves are its inner ranks.
int dtree_second_parent(int n, int r) {
  if (n % 2 == 1) {
    const int up = btree_parent(n, wrap(r - 1, n));
    return up < 0 ? -1 : (up + 1) % n;
  }
  const int up = btree_parent(n, n - 1 - r);
  return up < 0 ? -1 : n - 1 - up;
}

}  // namespace

std::int64_t CollectiveRun::link_bytes(int src, int dst) const {
  return link_bytes_by_pair.at(at(std::int64_t{src} * ranks + dst));
}

int CollectiveRun::link_steps(int src, int dst) const {
  return link_steps_by_pair.at(at(std::int64_t{src} * ranks + dst));
}

std::int64_t CollectiveRun::total_bytes_sent() const {
  std::int64_t t = 0;
  for (const auto& r : per_rank) t += r.bytes_sent;
  return t;
}

std::int64_t CollectiveRun::total_additions() const {
  std::int64_t t = 0;
  for (const auto& r : per_rank) t += r.additions;
  return t;
}

std::int64_t CollectiveRun::inter_node_bytes(int ranks_per_node) const {
  std::int64_t t = 0;
  for (int s = 0; s < ranks; ++s) {
    for (int d = 0; d < ranks; ++d) {
      if (s / ranks_per_node != d / ranks_per_node) t += link_bytes(s, d);
    }
  }
  return t;
}

namespace {

// A ring collective over buffers reduced in place: its record, the channels checked, the inputs copied in.
CollectiveRun in_place_ring(const RankBuffers& in, const char* what, int channels) {
  CollectiveRun run = start(in, what);
  check_channels(channels, what);
  run.buffers = in;
  return run;
}

}  // namespace

CollectiveRun ring_all_reduce(const RankBuffers& in, std::int64_t elt_bytes, int channels) {
  CollectiveRun run = in_place_ring(in, "ring_all_reduce", channels);
  const int n = run.ranks;
  const auto size = static_cast<std::int64_t>(in.front().size());
  // Channel ch owns a contiguous 1/C of the buffer and splits it into n chunks.
  const auto range_of = [&](int ch, int k) {
    const auto [b, e] = part(0, size, ch, channels);
    return part(b, e - b, k, n);
  };
  RankBuffers wire(in.size());
  // Reduce-scatter: after step s, rank r + 1 holds chunk r - s summed over s + 2 ranks; after
  // n - 1 steps rank r holds chunk r + 1 summed over all.
  for (int s = 0; s < n - 1; ++s) {
    ring_step(
        run, wire, channels, range_of, [&](int r) { return wrap(r - s, n); }, true, elt_bytes);
  }
  // All-gather: the reduced chunks go on around the ring.
  for (int s = 0; s < n - 1; ++s) {
    ring_step(
        run, wire, channels, range_of, [&](int r) { return wrap(r + 1 - s, n); }, false, elt_bytes);
  }
  return run;
}

CollectiveRun ring_reduce_scatter(const RankBuffers& in, std::int64_t elt_bytes, int channels) {
  CollectiveRun run = in_place_ring(in, "ring_reduce_scatter", channels);
  const int n = run.ranks;
  const auto size = static_cast<std::int64_t>(in.front().size());
  const auto range_of = blocked_ranges(size, n, channels);
  RankBuffers wire(in.size());
  // At step s rank r sends block r - s - 1: the last step delivers block r + 1 to rank r + 1.
  for (int s = 0; s < n - 1; ++s) {
    ring_step(
        run, wire, channels, range_of, [&](int r) { return wrap(r - s - 1, n); }, true, elt_bytes);
  }
  for (int r = 0; r < n; ++r) {
    const auto [b, e] = part(0, size, r, n);
    auto& buf = run.buffers[at(r)];
    buf = std::vector<float>(buf.begin() + b, buf.begin() + e);
  }
  return run;
}

CollectiveRun ring_all_gather(const RankBuffers& in, std::int64_t elt_bytes, int channels) {
  CollectiveRun run = start(in, "ring_all_gather");
  check_channels(channels, "ring_all_gather");
  const int n = run.ranks;
  const auto block = static_cast<std::int64_t>(in.front().size());
  const std::int64_t size = block * n;
  run.buffers.assign(in.size(), std::vector<float>(at(size), 0.0f));
  for (int r = 0; r < n; ++r) {
    std::copy(in[at(r)].begin(), in[at(r)].end(), run.buffers[at(r)].begin() + block * r);
  }
  const auto range_of = blocked_ranges(size, n, channels);
  RankBuffers wire(in.size());
  // At step s rank r forwards block r - s (its own at step 0).
  for (int s = 0; s < n - 1; ++s) {
    ring_step(
        run, wire, channels, range_of, [&](int r) { return wrap(r - s, n); }, false, elt_bytes);
  }
  return run;
}

CollectiveRun tree_all_reduce(const RankBuffers& in, int ranks_per_node, std::int64_t elt_bytes,
                              int trees) {
  CollectiveRun run = start(in, "tree_all_reduce");
  const int n = run.ranks;
  if (ranks_per_node < 1 || n % ranks_per_node != 0) {
    throw std::invalid_argument("tree_all_reduce: ranks do not fill nodes of ranks_per_node");
  }
  if (trees != 1 && trees != 2)
    throw std::invalid_argument("tree_all_reduce: trees must be 1 or 2");
  run.buffers = in;
  const int nodes = n / ranks_per_node;
  const auto size = static_cast<std::int64_t>(in.front().size());

  struct Tree {
    std::vector<int> parent;                 // -1: the root
    std::vector<std::vector<int>> children;  // ascending
    std::vector<int> height, depth;          // leaves height 0; the root depth 0
    Range segment;
  };
  std::vector<Tree> ts(at(trees));
  int rounds = 0;  // the trees' largest height: steps up, and as many down
  for (int t = 0; t < trees; ++t) {
    Tree& tr = ts[at(t)];
    tr.segment = part(0, size, t, trees);
    tr.parent.assign(at(n), -1);
    tr.children.assign(at(n), {});
    // Between nodes NCCL's binary tree (t = 0) or its mirror or shift (t = 1); the node's
    // first rank joins it, the others chain to it.
    for (int node = 0; node < nodes; ++node) {
      const int head = node * ranks_per_node;
      const int up = t == 0 ? btree_parent(nodes, node) : dtree_second_parent(nodes, node);
      if (up >= 0) tr.parent[at(head)] = up * ranks_per_node;
      for (int i = 1; i < ranks_per_node; ++i) tr.parent[at(head + i)] = head + i - 1;
    }
    for (int r = 0; r < n; ++r) {
      if (tr.parent[at(r)] >= 0) tr.children[at(tr.parent[at(r)])].push_back(r);
    }
    tr.depth.assign(at(n), -1);
    tr.height.assign(at(n), -1);
    const auto depth_of = [&](auto&& self, int r) -> int {
      if (tr.depth[at(r)] < 0)
        tr.depth[at(r)] = tr.parent[at(r)] < 0 ? 0 : 1 + self(self, tr.parent[at(r)]);
      return tr.depth[at(r)];
    };
    const auto height_of = [&](auto&& self, int r) -> int {
      if (tr.height[at(r)] < 0) {
        int h = 0;
        for (const int c : tr.children[at(r)]) h = std::max(h, 1 + self(self, c));
        tr.height[at(r)] = h;
      }
      return tr.height[at(r)];
    };
    for (int r = 0; r < n; ++r) {
      depth_of(depth_of, r);
      rounds = std::max(rounds, height_of(height_of, r));
    }
  }

  std::vector<RankBuffers> wire(at(trees), RankBuffers(at(n)));
  const auto send_segment = [&](int t, int r) {
    const auto [b, e] = ts[at(t)].segment;
    wire[at(t)][at(r)].assign(run.buffers[at(r)].begin() + b, run.buffers[at(r)].begin() + e);
  };
  // Up: in round k the ranks of height k - 1 (their children all in) send their partial sums;
  // each parent adds them in child order.
  for (int k = 1; k <= rounds; ++k) {
    tbb::parallel_for(0, n, [&](int r) {
      bool sent = false;
      for (int t = 0; t < trees; ++t) {
        const Tree& tr = ts[at(t)];
        if (tr.parent[at(r)] < 0 || tr.height[at(r)] != k - 1) continue;
        send_segment(t, r);
        count_send(run, r, tr.parent[at(r)], tr.segment.second - tr.segment.first, elt_bytes);
        sent = sent || tr.segment.second > tr.segment.first;
      }
      if (sent) run.per_rank[at(r)].steps_sending += 1;
    });
    tbb::parallel_for(0, n, [&](int q) {
      auto& buf = run.buffers[at(q)];
      for (int t = 0; t < trees; ++t) {
        const Tree& tr = ts[at(t)];
        const auto [b, e] = tr.segment;
        for (const int c : tr.children[at(q)]) {
          if (tr.height[at(c)] != k - 1) continue;
          const auto& w = wire[at(t)][at(c)];
          for (std::int64_t i = b; i < e; ++i) buf[at(i)] += w[at(i - b)];
          run.per_rank[at(q)].additions += e - b;
          run.per_rank[at(q)].bytes_received += (e - b) * elt_bytes;
        }
      }
    });
    ++run.steps;
  }
  // Down: in round k the ranks of depth k - 1 send the result to each of their children.
  for (int k = 1; k <= rounds; ++k) {
    tbb::parallel_for(0, n, [&](int r) {
      bool sent = false;
      for (int t = 0; t < trees; ++t) {
        const Tree& tr = ts[at(t)];
        if (tr.depth[at(r)] != k - 1 || tr.children[at(r)].empty()) continue;
        send_segment(t, r);
        for (const int c : tr.children[at(r)]) {
          count_send(run, r, c, tr.segment.second - tr.segment.first, elt_bytes);
        }
        sent = sent || tr.segment.second > tr.segment.first;
      }
      if (sent) run.per_rank[at(r)].steps_sending += 1;
    });
    tbb::parallel_for(0, n, [&](int q) {
      auto& buf = run.buffers[at(q)];
      for (int t = 0; t < trees; ++t) {
        const Tree& tr = ts[at(t)];
        if (tr.depth[at(q)] != k) continue;
        const auto [b, e] = tr.segment;
        const auto& w = wire[at(t)][at(tr.parent[at(q)])];
        std::copy(w.begin(), w.end(), buf.begin() + b);
        run.per_rank[at(q)].bytes_received += (e - b) * elt_bytes;
      }
    });
    ++run.steps;
  }
  return run;
}

CollectiveRun all_to_all(const RankBuffers& in, std::int64_t elt_bytes) {
  CollectiveRun run = start(in, "all_to_all");
  const int n = run.ranks;
  const auto size = static_cast<std::int64_t>(in.front().size());
  run.buffers.assign(in.size(), {});
  // One step: every rank sends chunk j to rank j (its own stays) and gathers chunk r of every
  // rank in rank order.
  tbb::parallel_for(0, n, [&](int r) {
    bool sent = false;
    for (int j = 0; j < n; ++j) {
      if (j == r) continue;
      const auto [b, e] = part(0, size, j, n);
      count_send(run, r, j, e - b, elt_bytes);
      sent = sent || e > b;
    }
    if (sent) run.per_rank[at(r)].steps_sending += 1;
    const auto [b, e] = part(0, size, r, n);
    auto& out = run.buffers[at(r)];
    for (int i = 0; i < n; ++i) {
      out.insert(out.end(), in[at(i)].begin() + b, in[at(i)].begin() + e);
      if (i != r) run.per_rank[at(r)].bytes_received += (e - b) * elt_bytes;
    }
  });
  run.steps = 1;
  return run;
}

CollectiveRun send_recv(const RankBuffers& in, int src, int dst, std::int64_t elt_bytes) {
  CollectiveRun run = start(in, "send_recv");
  const int n = run.ranks;
  if (src < 0 || src >= n || dst < 0 || dst >= n || src == dst) {
    throw std::invalid_argument("send_recv: src and dst must be two different ranks");
  }
  run.buffers = in;
  const auto size = static_cast<std::int64_t>(in.front().size());
  tbb::parallel_for(0, n, [&](int r) {
    if (r == src) {
      count_send(run, src, dst, size, elt_bytes);
      if (size > 0) run.per_rank[at(r)].steps_sending += 1;
    } else if (r == dst) {
      run.buffers[at(r)] = in[at(src)];
      run.per_rank[at(r)].bytes_received += size * elt_bytes;
    }
  });
  run.steps = 1;
  return run;
}

}  // namespace gpusim::functional
