#include "workloads/layer_repeat.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hw/serial_chain.h"
#include "workloads/transformer_phases.h"

namespace gpusim::workloads {
namespace {

// The step's kernels with their tensor accesses as ids: each vertex's reads, then its writes,
// one after another in `access`.
struct IdProgram {
  std::vector<hw::TensorAccess> access;
  std::vector<std::size_t> first_access;  // by vertex, into `access` (one more at the end)
  std::vector<std::size_t> reads;         // by vertex: how many of its accesses are reads
  std::vector<std::size_t> seen_first;    // by tensor id: its first access
  std::int32_t tensors = 0;
};

IdProgram ids_of(const KernelDag& dag) {
  IdProgram p;
  std::unordered_map<std::string_view, std::int32_t> id;
  auto add = [&](const hw::TensorUse& t) {
    const auto [it, fresh] = id.try_emplace(t.tensor, p.tensors);
    if (fresh) {
      ++p.tensors;
      p.seen_first.push_back(p.access.size());
    }
    p.access.push_back({it->second, t.bytes, t.evict_first});
  };
  for (std::size_t v = 0; v < dag.size(); ++v) {
    const hw::Launch& l = dag[static_cast<KernelDag::Vertex>(v)].launch;
    p.first_access.push_back(p.access.size());
    p.reads.push_back(l.reads.size());
    for (const auto& t : l.reads) add(t);
    for (const auto& t : l.writes) add(t);
  }
  p.first_access.push_back(p.access.size());
  return p;
}

// Two layers' kernels ask the same of the chip, with accesses of the same sizes.
bool same_kernels(const KernelDag& dag, std::size_t a, std::size_t b, std::size_t period) {
  auto same_uses = [](const std::vector<hw::TensorUse>& x, const std::vector<hw::TensorUse>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i].bytes != y[i].bytes || x[i].evict_first != y[i].evict_first) return false;
    }
    return true;
  };
  for (std::size_t i = 0; i < period; ++i) {
    const hw::Launch& x = dag[static_cast<KernelDag::Vertex>(a + i)].launch;
    const hw::Launch& y = dag[static_cast<KernelDag::Vertex>(b + i)].launch;
    if (!hw::same_launch_timing(x, y) || !same_uses(x.reads, y.reads) || !same_uses(x.writes, y.writes)) return false;
  }
  return true;
}

// What a tensor C accesses is in a later layer (see the header).
struct Role {
  enum Kind { kShared, kOwn, kFromPrevious } kind = kShared;
  std::int32_t index = 0;  // kOwn: which of the layer's own tensors; kFromPrevious: the access in the layer before
};

// The roles of C's accesses (a, b, c: the first access of layers A, B, C; q accesses a layer),
// or nothing when the three layers do not follow the pattern.
std::optional<std::vector<Role>> roles_of(const IdProgram& p, std::size_t a, std::size_t b, std::size_t c,
                                          std::size_t q, std::int32_t& own_count) {
  std::vector<Role> roles(q);
  std::unordered_map<std::int32_t, std::int32_t> own;
  for (std::size_t i = 0; i < q; ++i) {
    const std::int32_t ta = p.access[a + i].tensor, tb = p.access[b + i].tensor, tc = p.access[c + i].tensor;
    const std::size_t first_b = p.seen_first[static_cast<std::size_t>(tb)];
    const std::size_t first_c = p.seen_first[static_cast<std::size_t>(tc)];
    if (tc == tb) {
      if (tb != ta || first_c >= a) return std::nullopt;  // shared: made before the first of the run
      roles[i] = {Role::kShared, 0};
    } else if (first_c >= c) {
      if (first_b < b) return std::nullopt;  // B's counterpart must be B's own too
      roles[i] = {Role::kOwn, own.try_emplace(tc, static_cast<std::int32_t>(own.size())).first->second};
    } else if (first_c >= b && first_c < c) {
      // Made by B, first met at B's access s: B's counterpart must be made by A at A's access s.
      const std::size_t s = first_c - b;
      if (first_b != a + s) return std::nullopt;
      roles[i] = {Role::kFromPrevious, static_cast<std::int32_t>(s)};
    } else {
      return std::nullopt;
    }
  }
  own_count = static_cast<std::int32_t>(own.size());
  return roles;
}

// The activation peak of the whole step from the lowered one's profile (bytes alive at each
// vertex): A is the first layer of the run, B and C the next, e the epilogue's first vertex.
// Layers between C and the last are B again, the last is C, and each layer may leave bytes alive
// to the step's end (an output nothing reads): B's profile exceeds A's by those bytes at every
// vertex, and each extra layer adds them once more. Bytes are whole, so the sums are exact.
std::optional<double> whole_step_peak(const std::vector<double>& live, std::size_t a, std::size_t b,
                                      std::int64_t extra) {
  const std::size_t period = b - a;
  const double left = live[b] - live[a];
  if (left < 0) return std::nullopt;
  double peak = 0;
  for (std::size_t v = 0; v < live.size(); ++v) {
    if (v >= a && v < b && live[v + period] - live[v] != left) return std::nullopt;
    const bool after_b = v >= b;  // B (repeated up to the last but one layer), C and the epilogue
    peak = std::max(peak, live[v] + (after_b ? static_cast<double>(extra) * left : 0.0));
  }
  return peak;
}

// The layer index a listed step's op names ("layers[i].attn.q_proj"), or -1.
std::int64_t layer_index(const std::string& op) {
  constexpr std::string_view kPrefix = "layers[";
  if (op.compare(0, kPrefix.size(), kPrefix) != 0) return -1;
  const auto close = op.find(']');
  if (close == std::string::npos || close == kPrefix.size()) return -1;
  std::int64_t i = 0;
  for (std::size_t k = kPrefix.size(); k < close; ++k) {
    if (op[k] < '0' || op[k] > '9') return -1;
    i = 10 * i + (op[k] - '0');
  }
  return i;
}

// The op of a later block: its layer index moved on by `shift`.
std::string renumbered(const std::string& op, std::int64_t shift) {
  const auto close = op.find(']');
  return "layers[" + std::to_string(layer_index(op) + shift) + op.substr(close);
}

// Whether a listed step can follow C's kernels into later blocks: C's ops are named by layers of
// block C (from `c_layer`, `period` of them), and C's kernels depend on C and B as B's do on B and
// A (other producers the same).
bool listing_repeats(const KernelDag& dag, std::int64_t c_layer, std::int64_t period, std::size_t va,
                     std::size_t vb, std::size_t c, std::size_t layers_end) {
  const std::size_t block = vb - va;
  for (std::size_t v = c; v < layers_end; ++v) {
    const std::int64_t i = layer_index(dag[static_cast<KernelDag::Vertex>(v)].op);
    if (i < c_layer || i >= c_layer + period) return false;
    const auto& in_c = dag.deps(static_cast<KernelDag::Vertex>(v));
    const auto& in_b = dag.deps(static_cast<KernelDag::Vertex>(v - block));
    if (in_c.size() != in_b.size()) return false;
    for (std::size_t k = 0; k < in_c.size(); ++k) {
      const std::size_t expected = in_b[k] >= va ? in_b[k] + block : in_b[k];
      if (in_c[k] != expected) return false;
    }
  }
  // The epilogue waits for the last block or for what came before the run, never for A or B.
  for (std::size_t v = layers_end; v < dag.size(); ++v) {
    for (const auto d : dag.deps(static_cast<KernelDag::Vertex>(v))) {
      if (d >= va && d < c) return false;
    }
  }
  return true;
}

// The model's final run of repeating blocks: the shortest period (at most kMaxPeriod layers) whose
// last three blocks have the same layer kinds, extended back over every earlier equal block.
struct RepeatingRun {
  std::int64_t first = 0;
  std::int64_t period = 1;
};
RepeatingRun repeating_run(const ModelConfig& m) {
  constexpr std::int64_t kMaxPeriod = 8;
  const std::int64_t L = m.layers;
  const auto same_blocks = [&](std::int64_t a, std::int64_t b, std::int64_t p) {
    for (std::int64_t k = 0; k < p; ++k) {
      if (!(layer_kind(m, a + k) == layer_kind(m, b + k))) return false;
    }
    return true;
  };
  for (std::int64_t p = 1; p <= kMaxPeriod && 3 * p <= L; ++p) {
    std::int64_t first = L - 3 * p;
    if (!same_blocks(first, first + p, p) || !same_blocks(first + p, first + 2 * p, p)) continue;
    while (first - p >= 0 && same_blocks(first - p, first, p)) first -= p;
    return {first, p};
  }
  // No three equal blocks: the last layer's run of one kind (lowered whole when under three).
  std::int64_t first = L - 1;
  while (first > 0 && layer_kind(m, first - 1) == layer_kind(m, L - 1)) --first;
  return {first, 1};
}

}  // namespace

std::optional<ExtendedStep> simulate_repeating_layers(const ModelWorkload& w, const std::string& phase,
                                                      const StepShape& shape, OpLoweringCache& lowering,
                                                      hw::LaunchMode mode, hw::KernelOutcomeCache& cache,
                                                      bool listed) {
  const ModelConfig& m = w.model;
  // A routing trace gives each MoE layer its own expert rows: its layers do not repeat.
  if (!w.layer_expert_weights.empty()) return std::nullopt;
  // The repeating run: blocks of `period` layers (1, or the pattern of windowed and global
  // layers) from `first` to the end; lowered up to its third block.
  const RepeatingRun run_of_layers = repeating_run(m);
  const std::int64_t first = run_of_layers.first, block_layers = run_of_layers.period;
  const std::int64_t lowered = std::min(m.layers, first + 3 * block_layers);
  const std::int64_t extra = (m.layers - lowered) / block_layers;  // blocks after the third
  const StepProgram step = build_step(w, phase, shape, lowering, lowered);
  const KernelDag& dag = step.dag;
  const IdProgram p = ids_of(dag);
  hw::SerialChain chain(lowering.hw(), mode, cache);
  // Listed: every kernel's node and result, as run_step gives them (see ExtendedStep).
  std::vector<hw::KernelNode> nodes;
  std::vector<hw::KernelResult> results;
  if (listed) {
    nodes.reserve(dag.size() + static_cast<std::size_t>(extra) * (dag.size() / static_cast<std::size_t>(lowered)));
    results.reserve(nodes.capacity());
  }
  // Runs vertex v's kernel with `access` as its tensors; when listed, as the kernel of `op`
  // waiting for `deps`, its tensor lists kept when `own_tensors` (they are the lowered vertex's).
  auto run_as = [&](std::size_t v, std::span<const hw::TensorAccess> access, std::string op, std::vector<int> deps,
                    bool own_tensors) {
    const std::size_t reads = p.reads[v];
    const KernelVertex& vertex = dag[static_cast<KernelDag::Vertex>(v)];
    const hw::Launch& launch = vertex.launch;
    if (!listed) {
      chain.run(launch, access.first(reads), access.subspan(reads), vertex.host_gap, vertex.host_sync);
      return;
    }
    results.push_back(chain.run_listed(launch, access.first(reads), access.subspan(reads), op, vertex.host_gap,
                                       vertex.host_sync));
    hw::KernelNode node{launch, std::move(op), 0, std::move(deps), vertex.host_gap, vertex.host_sync};
    if (!own_tensors) {
      node.launch.reads.clear();
      node.launch.writes.clear();
    }
    nodes.push_back(std::move(node));
  };
  auto deps_of = [&](std::size_t v) {
    const auto& d = dag.deps(static_cast<KernelDag::Vertex>(v));
    return listed ? std::vector<int>(d.begin(), d.end()) : std::vector<int>();
  };
  auto run = [&](std::size_t v, std::span<const hw::TensorAccess> access) {
    run_as(v, access, listed ? dag[static_cast<KernelDag::Vertex>(v)].op : std::string(), deps_of(v), true);
  };
  auto lowered_access = [&](std::size_t v) {
    return std::span(p.access).subspan(p.first_access[v], p.first_access[v + 1] - p.first_access[v]);
  };

  std::size_t layers_end = dag.size();  // where the lowered kernels run up to before the extra layers
  std::vector<hw::TensorAccess> layer, epilogue;  // the extra layers' accesses; the epilogue's, renamed
  std::size_t c = 0;
  double peak = step.activation_peak_bytes;
  if (extra > 0) {
    if (static_cast<std::int64_t>(step.layer_starts.size()) != lowered) return std::nullopt;
    const std::size_t va = step.layer_starts[static_cast<std::size_t>(first)];
    const std::size_t vb = step.layer_starts[static_cast<std::size_t>(first + block_layers)];
    c = step.layer_starts[static_cast<std::size_t>(first + 2 * block_layers)];
    layers_end = step.layers_end;
    const std::size_t period = vb - va;
    if (c - vb != period || layers_end - c != period || !same_kernels(dag, va, vb, period) ||
        !same_kernels(dag, vb, c, period)) {
      return std::nullopt;
    }
    const std::size_t a = p.first_access[va], b = p.first_access[vb], cc = p.first_access[c];
    const std::size_t q = b - a;
    std::int32_t own_count = 0;
    const auto roles = roles_of(p, a, b, cc, q, own_count);
    const auto whole_peak = whole_step_peak(step.activation_profile, va, vb, extra);
    if (!roles || !whole_peak) return std::nullopt;
    peak = *whole_peak;
    if (listed && !listing_repeats(dag, first + 2 * block_layers, block_layers, va, vb, c, layers_end)) {
      return std::nullopt;
    }
    // The epilogue reads what C made where it reads the last layer's tensors.
    const std::size_t e = p.first_access[layers_end];
    epilogue.assign(p.access.begin() + static_cast<std::ptrdiff_t>(e), p.access.end());
    std::vector<std::size_t> from_c(epilogue.size(), q);  // C's access s standing for it, or q
    for (std::size_t i = 0; i < epilogue.size(); ++i) {
      const std::size_t seen = p.seen_first[static_cast<std::size_t>(epilogue[i].tensor)];
      if (seen >= cc && seen < e) {
        from_c[i] = seen - cc;
      } else if (seen >= a && seen < cc) {
        return std::nullopt;  // the epilogue would read an earlier layer's own tensor
      }
    }
    // Layer by layer: C's accesses as lowered, then each extra layer's ids from the one before.
    std::vector<std::int32_t> previous(q), ids(q);
    for (std::size_t i = 0; i < q; ++i) previous[i] = p.access[cc + i].tensor;
    layer.assign(p.access.begin() + static_cast<std::ptrdiff_t>(cc), p.access.begin() + static_cast<std::ptrdiff_t>(cc + q));
    for (std::size_t v = 0; v < layers_end; ++v) run(v, lowered_access(v));
    for (std::int64_t r = 1; r <= extra; ++r) {
      for (std::size_t i = 0; i < q; ++i) {
        const Role& role = (*roles)[i];
        ids[i] = role.kind == Role::kShared ? previous[i]
                 : role.kind == Role::kOwn  ? p.tensors + static_cast<std::int32_t>(r - 1) * own_count + role.index
                                            : previous[static_cast<std::size_t>(role.index)];
      }
      for (std::size_t i = 0; i < q; ++i) layer[i].tensor = ids[i];
      previous.swap(ids);
      for (std::size_t v = c; v < layers_end; ++v) {
        const std::size_t from = p.first_access[v] - cc, to = p.first_access[v + 1] - cc;
        if (!listed) {
          run_as(v, std::span(layer).subspan(from, to - from), {}, {}, false);
          continue;
        }
        // Layer r's kernels depend on layer r and r - 1 as C's do on C and B; shared producers stay.
        std::vector<int> deps = deps_of(v);
        for (int& d : deps) {
          if (d >= static_cast<int>(vb)) d += static_cast<int>(r * static_cast<std::int64_t>(period));
        }
        const std::string& op = dag[static_cast<KernelDag::Vertex>(v)].op;
        run_as(v, std::span(layer).subspan(from, to - from), renumbered(op, r * block_layers), std::move(deps), false);
      }
    }
    for (std::size_t i = 0; i < epilogue.size(); ++i) {
      if (from_c[i] < q) epilogue[i].tensor = previous[from_c[i]];
    }
    const int shift = static_cast<int>(extra * static_cast<std::int64_t>(period));
    for (std::size_t v = layers_end; v < dag.size(); ++v) {
      const std::size_t from = p.first_access[v] - e, to = p.first_access[v + 1] - e;
      std::vector<int> deps = deps_of(v);
      for (int& d : deps) {
        if (d >= static_cast<int>(c)) d += shift;  // the last layer's kernels, or the epilogue's
      }
      run_as(v, std::span(epilogue).subspan(from, to - from),
             listed ? dag[static_cast<KernelDag::Vertex>(v)].op : std::string(), std::move(deps),
             false);  // its activations are numbered as in the shorter program
    }
  } else {
    for (std::size_t v = 0; v < dag.size(); ++v) run(v, lowered_access(v));
  }

  ExtendedStep out;
  out.activation_peak_bytes = peak;
  StepRun& s = out.run;
  s.phase = phase;
  s.shape = shape;
  s.total_us = chain.end().us();
  s.kernel_time_us = chain.kernel_time_us();
  s.kernels = chain.kernels();
  s.events = chain.events();
  s.extended = extra > 0;
  if (listed) s.detail = StepDetail{std::move(nodes), hw::EngineResult{std::move(results), chain.end(), s.events}, std::nullopt};
  return out;
}

}  // namespace gpusim::workloads
