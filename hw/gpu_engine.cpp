#include "hw/gpu_engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <map>
#include <tuple>

#include "hw/kernel_outcome_cache.h"
#include "hw/l2_residency.h"
#include "hw/occupancy.h"
#include "hw/sm_state.h"
#include "sim/error.h"
#include "sim/fair_share.h"
#include "sim/simulation.h"

namespace gpusim::hw {
namespace {

enum Pipe { kTensorPipe, kFp32Pipe, kSfuPipe, kPipeCount };

// Event priorities among events at the same instant: completions free slots before newly
// ready kernels ask for them.
constexpr int kCompletion = 0, kFixedDone = 1, kReady = 2, kDispatch = 3;

// DRAM round trips of queueing and drain a DRAM-saturating kernel pays beyond its stream
// (calibrated on the calibration set's elementwise rows; see finish()).
constexpr double kDrainRoundTrips = 3.0;

// Damped fixed-point steps that settle loaded memory latency against DRAM utilization.
constexpr int kLoadedLatencySteps = 3;

sim::Time seconds_to_time_ceil(double seconds) { return sim::from_seconds_ceil(seconds); }

struct KernelState {
  const KernelNode* node = nullptr;
  Occupancy occupancy;
  CtaFootprint footprint;
  sim::Time host_time;  // earliest start the host allows (eager mode)
  // Eager mode after a host sync: the host issues this launch host_time after the sync kernel
  // `host_anchor` ends (-1: host_time is from the start).
  int host_anchor = -1;
  int deps_left = 0;
  std::vector<int> dependents;
  std::size_t next_class = 0;        // dispatch cursor: class index...
  std::int64_t next_in_class = 0;    // ...and CTAs of it already placed
  std::int64_t ctas_unplaced = 0;
  std::int64_t ctas_running = 0;
  int resident_warps = 0;
  double warp_seconds = 0;  // integral of resident warps over time
  std::vector<int> ctas_on_sm;    // its resident CTAs per SM (sized on first placement)
  int active_sms = 0;             // SMs holding at least one of its CTAs
  double active_sm_seconds = 0;   // integral of active_sms over time
  L2Charge charge;  // what its CTAs pay for the L2 state they meet
  // Set when it started alone (idle chip, nothing pending): its outcome goes to the cache, and
  // these are the events processed before it.
  std::optional<std::uint64_t> solo_events_before;
  KernelResult result;
};

// Identical CTAs of one kernel class placed at one instant, the same number on each of its SMs.
struct Cohort {
  int kernel = 0;
  std::size_t cls = 0;   // CTA class within the kernel
  std::vector<int> sms;  // the SMs it occupies
  int per_sm = 0;        // its CTAs on each of them
  int count = 0;         // per_sm x sms.size(); 0 once finished
  std::vector<int> registers_taken;  // per SM, per sub-partition (sms.size() x sub-partitions)
  bool streaming = false;
  double remaining = 1;  // share of each CTA's work still to do
  double rate = 0;       // share per second
  std::array<double, kPipeCount> pipe_work{};  // FP32 work already divided by its efficiency
  DType tensor_dtype = DType::kBf16;
  double l2_bytes = 0, dram_bytes = 0, inflight = 0;
  double link_bytes = 0, network_bytes = 0;  // to other GPUs, and of those to other nodes
  double write_bytes = 0;  // part of dram_bytes: stores, which do not wait (no Little's law)
  double activations = 0;  // DRAM row activations (dram_bytes in short runs; 0 for long ones)
  bool bulk_copies = false;  // TMA loads: outside the SM's miss-slot limit
  double pipe_overlap = 1;
  double critical_path = 0;  // seconds
  double issue_path = 0;     // seconds of critical_path that contend for the SM's schedulers
  sim::Time placed;          // when its CTAs became resident
};

// DRAM writes one CTA causes: its stores stay in L2 as dirty lines, so what reaches DRAM are the
// dirty lines its loads evict and its stores past the L2's dirty limit.
double written_back(const CtaWork& w, const L2Charge& charge) {
  return w.dram_read_bytes * charge.read_miss * charge.evicted_per_load + w.dram_write_bytes * charge.store_cost;
}

class Engine {
 public:
  Engine(const HardwareSpec& hw, LaunchMode mode, EngineObserver* observer, KernelOutcomeCache* cache,
         L2DirtyLines::Start l2_start = L2DirtyLines::Start::kDirty)
      : hw_(hw), mode_(mode), observer_(observer), cache_(cache), l2_curve_(L2ReuseCurve::of(hw.l2)), l2_(static_cast<std::int64_t>(l2_curve_.horizon())),
        l2_dirty_(static_cast<double>(hw.l2.size), hw.l2.max_dirty_share, l2_start), clock_hz_(hw.clocks.sustained_other_hz) {
    sms_.reserve(hw.sm_count);
    for (int i = 0; i < hw.sm_count; ++i) sms_.emplace_back(hw.sm);
    // DRAM, L2, the GPU's links to its peers and its NIC (none on a chip alone: no kernel may send).
    capacities_ = {hw.dram.achievable_bandwidth(), hw.l2.bandwidth,
                   std::max(hw.system.link_bandwidth(), 1.0),
                   std::max(hw.system.network_bandwidth(), 1.0), hw.dram.activation_capacity()};
  }

  // Every kernel pays this for the L2, whatever the L2 holds.
  void force_l2_charge(const L2Charge& charge) { forced_charge_ = charge; }
  double warp_seconds(int index) const { return kernels_[static_cast<std::size_t>(index)].warp_seconds; }
  double active_sm_seconds(int index) const {
    return kernels_[static_cast<std::size_t>(index)].active_sm_seconds;
  }

  EngineResult run(const std::vector<KernelNode>& nodes) {
    prepare(nodes);
    sim_.run([this] { after_batch(); });
    EngineResult out;
    out.end = sim_.now();
    out.events = sim_.events_processed();
    for (auto& k : kernels_) {
      if (k.result.end < k.result.start || k.ctas_unplaced > 0 || k.ctas_running > 0) {
        throw std::logic_error("engine finished with kernel " + k.result.name + " incomplete");
      }
      out.kernels.push_back(std::move(k.result));
    }
    return out;
  }

 private:
  void prepare(const std::vector<KernelNode>& nodes) {
    kernels_.resize(nodes.size());
    std::vector<int> last_in_stream;
    sim::Time host_clock;  // eager mode: when the host issues the launch, after host_anchor ends
    int host_anchor = -1;  // the last host sync so far
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      KernelState& k = kernels_[i];
      k.node = &nodes[i];
      const Launch& l = nodes[i].launch;
      std::int64_t classes_total = 0;
      for (const auto& c : l.ctas) classes_total += c.count;
      if (l.cta_count() <= 0 || classes_total != l.cta_count()) {
        throw ModelError(fmt::format("kernel {}: its CTA classes ({}) do not add up to its grid ({})",
                                     l.name, classes_total, l.cta_count()));
      }
      k.occupancy = occupancy_of(l);
      if (!k.occupancy.does_not_fit.empty()) {
        throw ModelError(fmt::format("kernel {} cannot run on {}: {}", l.name, hw_.name,
                                     k.occupancy.does_not_fit));
      }
      for (const auto& c : l.ctas) {
        if (c.work.tensor_efficiency <= 0 || c.work.tensor_efficiency > 1) {
          throw ModelError(fmt::format("kernel {}: tensor_efficiency must be in (0, 1]", l.name));
        }
        if (c.work.fp32_efficiency <= 0 || c.work.fp32_efficiency > 1) {
          throw ModelError(fmt::format("kernel {}: fp32_efficiency must be in (0, 1]", l.name));
        }
        if (c.work.link_bytes > 0 && hw_.system.link_bandwidth() <= 0) {
          throw ModelError(fmt::format("kernel {} sends to other GPUs, but {} has no interconnect", l.name, hw_.name));
        }
        if (c.work.network_bytes > 0 && hw_.system.network_bandwidth() <= 0) {
          throw ModelError(fmt::format("kernel {} sends to other nodes, but {} has no network", l.name, hw_.name));
        }
        if (c.work.tensor_flops > 0 && hw_.tensor_flops_per_cycle(c.work.tensor_dtype) <= 0) {
          throw ModelError(fmt::format("kernel {}: {} has no {} tensor cores", l.name, hw_.name,
                                       name(c.work.tensor_dtype)));
        }
      }
      k.footprint = footprint_of(k.occupancy);
      k.ctas_unplaced = l.cta_count();
      if (mode_ == LaunchMode::kEager) {
        host_clock += eager_host_gap(hw_, nodes[i].host_gap, static_cast<std::int64_t>(i));
        k.host_time = host_clock;
        k.host_anchor = host_anchor;
      }
      init_result(k);

      std::vector<int>& deps = deps_scratch_;
      deps.assign(nodes[i].deps.begin(), nodes[i].deps.end());
      // The host issues nothing before the sync it waits on has ended.
      if (k.host_anchor >= 0) deps.push_back(k.host_anchor);
      if (mode_ == LaunchMode::kEager && nodes[i].host_sync) {
        host_anchor = static_cast<int>(i);
        host_clock = sim::Time();
      }
      const int stream = nodes[i].stream;
      if (stream < 0) throw ModelError("kernel " + l.name + ": negative stream");
      if (static_cast<int>(last_in_stream.size()) <= stream) last_in_stream.resize(stream + 1, -1);
      if (last_in_stream[stream] >= 0) deps.push_back(last_in_stream[stream]);
      last_in_stream[stream] = static_cast<int>(i);
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      for (const int d : deps) {
        if (d < 0 || d >= static_cast<int>(i)) {
          throw ModelError(fmt::format("kernel {} depends on node {}, which is not earlier", l.name, d));
        }
        kernels_[d].dependents.push_back(static_cast<int>(i));
      }
      k.deps_left = static_cast<int>(deps.size());
      if (k.deps_left == 0) {
        const int index = static_cast<int>(i);
        sim_.at(k.host_time, kReady, [this, index] { on_ready(index); });
      }
    }
  }

  // The occupancy rules for a launch's block; a step repeats a few block shapes many times.
  const Occupancy& occupancy_of(const Launch& l) {
    const auto key = std::make_tuple(l.block.count(), l.regs_per_thread, l.smem_per_cta);
    auto it = occupancies_.find(key);
    if (it == occupancies_.end()) {
      const BlockResources block{static_cast<int>(l.block.count()), l.regs_per_thread, l.smem_per_cta};
      it = occupancies_.emplace(key, compute_occupancy(hw_.sm, block)).first;
    }
    return it->second;
  }

  void init_result(KernelState& k) {
    k.result = launch_result(hw_, k.node->launch, k.occupancy);
    k.result.op = k.node->op;
    k.result.start = sim::Time::from_ps(-1);
  }

  // --- the launch front end ---

  void on_ready(int index) {
    advance();
    KernelState& k = kernels_[index];
    k.result.start = sim_.now();
    // Nothing runs and nothing else can start before this kernel ends (its dependents wait for
    // it): it runs alone, and its outcome depends on its launch and L2 state only.
    const bool solo = live_.empty() && sim_.pending() == 0;
    live_.push_back(index);
    apply_l2(k);
    if (k.result.tensor_heavy) ++tensor_heavy_running_;
    update_clock();
    k.result.clock_hz = clock_hz_;
    if (solo && cache_) {
      // With an observer every CTA must be seen: simulate, but still record the outcome.
      const SoloOutcome* known = observer_ ? nullptr : cache_->find(k.node->launch, k.charge);
      if (known) {
        replay(index, *known);
        return;
      }
      k.solo_events_before = sim_.events_processed();
    }
    sim_.after(hw_.launch.kernel_overhead, kDispatch, [this, index] {
      advance();
      dispatching_.push_back(index);
      std::sort(dispatching_.begin(), dispatching_.end());
      dispatch();
    });
  }

  // A cached solo outcome stands for the kernel's CTAs: it ends after the same span, with the
  // same totals and the same count of events.
  void replay(int index, const SoloOutcome& o) {
    KernelState& k = kernels_[index];
    k.warp_seconds = o.warp_seconds;
    k.active_sm_seconds = o.active_sm_seconds;
    k.result.dram_read_bytes = o.dram_read_bytes;
    k.result.dram_write_bytes = o.dram_write_bytes;
    k.ctas_unplaced = 0;
    sim_.count_events(o.events - 1);  // all but the end, which runs below
    sim_.after(o.duration, kCompletion, [this, index] {
      advance();
      kernel_done(index);
    });
  }

  // What the kernel finds in L2, then what it leaves there.
  void apply_l2(KernelState& k) {
    const L2Pass pass = pass_through_l2(l2_, l2_curve_, k.node->launch.reads, k.node->launch.writes);
    k.charge = forced_charge_.value_or(l2_charge(k.node->launch, pass.read_miss, l2_dirty_));
    k.result.l2_read_hit_rate = pass.read_hit_rate;
  }

  void kernel_done(int index) {
    KernelState& k = kernels_[index];
    k.result.end = sim_.now();
    k.result.achieved_occupancy = achieved_occupancy(hw_, k.warp_seconds, k.result.end - k.result.start);
    k.result.achieved_occupancy_active = achieved_occupancy_active(hw_, k.warp_seconds, k.active_sm_seconds);
    if (k.result.tensor_heavy) --tensor_heavy_running_;
    std::erase(live_, index);
    if (k.solo_events_before) {
      cache_->insert(k.node->launch, k.charge,
                     {k.result.end - k.result.start, k.warp_seconds, k.result.dram_read_bytes,
                      k.result.dram_write_bytes, sim_.events_processed() - *k.solo_events_before,
                      k.active_sm_seconds});
    }
    update_clock();
    for (const int d : k.dependents) {
      KernelState& next = kernels_[d];
      if (--next.deps_left == 0) {
        if (next.host_anchor >= 0) next.host_time = kernels_[next.host_anchor].result.end + next.host_time;
        const sim::Time ready = std::max(sim_.now() + hw_.launch.graph_gap, next.host_time);
        sim_.at(ready, kReady, [this, d] { on_ready(d); });
      }
    }
  }

  void update_clock() {
    const double clock =
        tensor_heavy_running_ > 0 ? hw_.clocks.sustained_tensor_hz : hw_.clocks.sustained_other_hz;
    if (clock != clock_hz_) {
      clock_hz_ = clock;
      dirty_ = true;
    }
  }

  // --- the CTA dispatcher ---

  // Earlier kernels first; within a kernel, breadth-first over SMs in index order.
  void dispatch() {
    for (const int index : dispatching_) place_ctas(index);
    std::erase_if(dispatching_, [this](int i) { return kernels_[i].ctas_unplaced == 0; });
  }

  // Places as many of the kernel's remaining CTAs as fit, in hardware order (breadth-first over
  // SMs), and makes cohorts of them.
  void place_ctas(int index) {
    KernelState& k = kernels_[index];
    const int most = static_cast<int>(std::min<std::int64_t>(k.ctas_unplaced, hw_.sm.max_ctas));
    runs_.clear();
    const bool all_idle = std::all_of(sms_.begin(), sms_.end(), [](const SmState& sm) { return sm.ctas() == 0; });
    if (all_idle) {
      place_on_idle_sms(k, sms_[0].capacity(k.footprint, most));
    } else {
      place_breadth_first(k, most);
    }
    // SMs that got the same class and count behave alike: one cohort each.
    std::sort(runs_.begin(), runs_.end());
    for (std::size_t i = 0; i < runs_.size();) {
      std::size_t j = i;
      while (j < runs_.size() && runs_[j].cls == runs_[i].cls && runs_[j].count == runs_[i].count) ++j;
      const int id = new_cohort(index, static_cast<std::size_t>(runs_[i].cls), runs_[i].count);
      Cohort& c = cohorts_[id];
      const std::size_t parts = static_cast<std::size_t>(hw_.sm.sub_partitions);
      c.registers_taken.assign((j - i) * parts, 0);
      if (k.ctas_on_sm.empty()) k.ctas_on_sm.assign(sms_.size(), 0);
      for (std::size_t m = i; m < j; ++m) {
        c.sms.push_back(runs_[m].sm);
        if (k.ctas_on_sm[static_cast<std::size_t>(runs_[m].sm)] == 0) ++k.active_sms;
        k.ctas_on_sm[static_cast<std::size_t>(runs_[m].sm)] += c.per_sm;
        taken_.assign(parts, 0);
        sms_[runs_[m].sm].place(k.footprint, c.per_sm, taken_);
        std::copy(taken_.begin(), taken_.end(),
                  c.registers_taken.begin() + static_cast<std::ptrdiff_t>((m - i) * parts));
      }
      c.count = c.per_sm * static_cast<int>(c.sms.size());
      k.resident_warps += c.count * k.footprint.warps;
      k.ctas_running += c.count;
      i = j;
    }
  }

  // Breadth-first over SMs in rounds: round r gives one CTA to every SM with room for r, in SM
  // order, while CTAs remain. Records what each SM gets as (class, count) runs.
  void place_breadth_first(KernelState& k, int most) {
    const std::size_t n_sms = sms_.size();
    room_.resize(n_sms);
    int rounds = 0;
    for (std::size_t sm = 0; sm < n_sms; ++sm) {
      room_[sm] = sms_[sm].capacity(k.footprint, most);
      rounds = std::max(rounds, room_[sm]);
    }
    // Fast path: everything this pass places belongs to the current class (large grids refill
    // freed SMs wave after wave), so each SM's count follows from the rounds alone.
    std::int64_t total_room = 0;
    for (const int r : room_) total_room += r;
    const std::int64_t n = std::min(k.ctas_unplaced, total_room);
    const auto& cls = k.node->launch.ctas[k.next_class];
    if (n <= cls.count - k.next_in_class) {
      place_rounds_of_one_class(k, n, rounds);
      return;
    }
    run_class_.assign(n_sms, -1);
    run_count_.assign(n_sms, 0);
    auto close_run = [this](std::size_t sm) {
      if (run_count_[sm] > 0) runs_.push_back({run_class_[sm], run_count_[sm], static_cast<int>(sm)});
      run_count_[sm] = 0;
    };
    for (int r = 1; r <= rounds && k.ctas_unplaced > 0; ++r) {
      for (std::size_t sm = 0; sm < n_sms && k.ctas_unplaced > 0; ++sm) {
        if (room_[sm] < r) continue;
        const int cls = static_cast<int>(k.next_class);
        if (run_class_[sm] != cls) {
          close_run(sm);
          run_class_[sm] = cls;
        }
        ++run_count_[sm];
        take_ctas(k, 1);
      }
    }
    for (std::size_t sm = 0; sm < n_sms; ++sm) close_run(sm);
  }

  // Breadth-first placement of n CTAs of the current class: full rounds give every SM with
  // room one more CTA; the last, partial round goes to the first SMs (in SM order) with room.
  void place_rounds_of_one_class(KernelState& k, std::int64_t n, int rounds) {
    const std::size_t n_sms = sms_.size();
    // SMs with room for at least r CTAs take part in round r: a suffix sum over room values.
    with_room_.assign(static_cast<std::size_t>(rounds) + 2, 0);
    for (std::size_t sm = 0; sm < n_sms; ++sm) ++with_room_[static_cast<std::size_t>(room_[sm])];
    for (int r = rounds - 1; r >= 0; --r) with_room_[r] += with_room_[r + 1];
    std::int64_t left = n;
    int full = 0;  // rounds completed
    for (int r = 1; r <= rounds && with_room_[r] <= left; ++r) {
      left -= with_room_[r];
      full = r;
    }
    for (std::size_t sm = 0; sm < n_sms; ++sm) {
      int count = std::min(room_[sm], full);
      if (left > 0 && room_[sm] > full) {
        ++count;
        --left;
      }
      if (count > 0) runs_.push_back({static_cast<int>(k.next_class), count, static_cast<int>(sm)});
    }
    take_ctas(k, n);
  }

  // The same order on an idle GPU, where every SM has the same room: CTA j of this pass goes to
  // SM j mod S, so SM i gets CTAs i, i + S, i + 2S, ... of the pass.
  void place_on_idle_sms(KernelState& k, int room) {
    const auto n_sms = static_cast<std::int64_t>(sms_.size());
    const std::int64_t placed = std::min<std::int64_t>(k.ctas_unplaced, room * n_sms);
    // The pass's CTAs by class: [first, last) pass indices of each class segment.
    std::int64_t begin = 0;
    while (begin < placed) {
      const auto& classes = k.node->launch.ctas;
      const int cls = static_cast<int>(k.next_class);
      const std::int64_t end = std::min(placed, begin + classes[k.next_class].count - k.next_in_class);
      // SM i gets the pass indices j in [begin, end) with j = i (mod S): count per SM.
      for (std::int64_t sm = 0; sm < n_sms; ++sm) {
        const auto below = [&](std::int64_t x) { return x > sm ? (x - sm + n_sms - 1) / n_sms : 0; };
        const std::int64_t count = below(end) - below(begin);
        if (count > 0) runs_.push_back({cls, static_cast<int>(count), static_cast<int>(sm)});
      }
      take_ctas(k, end - begin);
      begin = end;
    }
  }

  // Advances the kernel's dispatch cursor over `n` CTAs placed in order.
  void take_ctas(KernelState& k, std::int64_t n) {
    const auto& classes = k.node->launch.ctas;
    while (n > 0) {
      const std::int64_t here = std::min(n, classes[k.next_class].count - k.next_in_class);
      const CtaWork& w = classes[k.next_class].work;
      k.result.dram_read_bytes += static_cast<double>(here) * w.dram_read_bytes * k.charge.read_miss;
      k.result.dram_write_bytes += static_cast<double>(here) * written_back(w, k.charge);
      k.ctas_unplaced -= here;
      k.next_in_class += here;
      n -= here;
      if (k.next_in_class == classes[k.next_class].count) {
        ++k.next_class;
        k.next_in_class = 0;
      }
    }
  }

  int new_cohort(int index, std::size_t cls, int per_sm) {
    const KernelState& k = kernels_[index];
    const CtaWork& w = k.node->launch.ctas[cls].work;
    Cohort c;
    c.kernel = index;
    c.cls = cls;
    c.per_sm = per_sm;
    c.pipe_work = {w.tensor_flops / w.tensor_efficiency, w.fp32_flops / w.fp32_efficiency, w.sfu_ops};
    c.tensor_dtype = w.tensor_dtype;
    c.l2_bytes = w.l2_bytes;
    c.link_bytes = w.link_bytes;
    c.network_bytes = w.network_bytes;
    c.write_bytes = written_back(w, k.charge);
    c.dram_bytes = w.dram_read_bytes * k.charge.read_miss + c.write_bytes;
    c.activations = w.dram_run_bytes > 0 ? c.dram_bytes / w.dram_run_bytes : 0.0;
    c.inflight = w.max_inflight_bytes;
    c.bulk_copies = w.bulk_copies;
    c.pipe_overlap = w.pipe_overlap;
    c.critical_path = w.critical_path.seconds();
    c.issue_path = w.issue_path.seconds();
    c.placed = sim_.now();
    const int id = static_cast<int>(cohorts_.size());
    cohorts_.push_back(std::move(c));
    active_.push_back(id);
    if (w.fixed.ps() > 0) {
      sim_.after(w.fixed, kFixedDone, [this, id] {
        advance();
        cohorts_[id].streaming = true;
        dirty_ = true;
      });
    } else {
      cohorts_[id].streaming = true;
    }
    dirty_ = true;
    return id;
  }

  // --- progress and completion ---

  void advance() {
    const double dt = (sim_.now() - last_advance_).seconds();
    if (dt <= 0) return;
    for (const int id : active_) {
      Cohort& c = cohorts_[id];
      if (c.streaming) c.remaining -= c.rate * dt;
    }
    for (const int i : live_) {
      kernels_[i].warp_seconds += kernels_[i].resident_warps * dt;
      kernels_[i].active_sm_seconds += kernels_[i].active_sms * dt;
    }
    last_advance_ = sim_.now();
  }

  void after_batch() {
    // A cohort whose work is (nearly) done finishes now; then freed slots are refilled.
    bool finished = false;
    for (const int id : active_) {
      Cohort& c = cohorts_[id];
      if (c.streaming && (c.remaining <= 0 || (c.rate > 0 && c.remaining / c.rate < 1e-12))) {
        finish(id);
        finished = true;
      }
    }
    if (finished) {
      std::erase_if(active_, [this](int id) { return cohorts_[id].count == 0; });
      dispatch();
    }
    if (!dirty_ && !finished) return;
    dirty_ = false;
    recompute_rates();
    schedule_next_completion();
    if (observer_) report_chip_state();
  }

  void report_chip_state() {
    double dram = 0;
    for (const int id : active_) {
      const Cohort& c = cohorts_[id];
      if (c.streaming && std::isfinite(c.rate)) dram += c.rate * c.count * c.dram_bytes;
    }
    std::int64_t warps = 0;
    for (const int i : live_) warps += kernels_[i].resident_warps;
    observer_->on_chip_state(sim_.now(), dram, warps);
  }

  void finish(int id) {
    Cohort& c = cohorts_[id];
    KernelState& k = kernels_[c.kernel];
    const std::size_t parts = static_cast<std::size_t>(hw_.sm.sub_partitions);
    for (std::size_t m = 0; m < c.sms.size(); ++m) {
      taken_.assign(c.registers_taken.begin() + static_cast<std::ptrdiff_t>(m * parts),
                    c.registers_taken.begin() + static_cast<std::ptrdiff_t>((m + 1) * parts));
      sms_[c.sms[m]].release(k.footprint, c.per_sm, taken_);
      int& held = k.ctas_on_sm[static_cast<std::size_t>(c.sms[m])];
      held -= c.per_sm;
      if (held == 0) --k.active_sms;
      if (observer_) observer_->on_ctas(c.kernel, c.sms[m], c.per_sm, c.placed, sim_.now());
    }
    k.resident_warps -= c.count * k.footprint.warps;
    k.ctas_running -= c.count;
    c.count = 0;
    if (k.ctas_running == 0 && k.ctas_unplaced == 0) {
      // The kernel ends when its last stores have drained. Under DRAM load the first loads
      // queue and the last stores drain behind the stream: about kDrainRoundTrips DRAM latencies
      // scaled by the kernel's DRAM utilization (none for a kernel that barely touches DRAM).
      const double busy = (sim_.now() - k.result.start - hw_.launch.kernel_overhead).seconds();
      const double utilization =
          busy > 0 ? std::min(1.0, (k.result.dram_read_bytes + k.result.dram_write_bytes) /
                                       (busy * hw_.dram.achievable_bandwidth()))
                   : 0.0;
      const int index = c.kernel;
      sim::Time end_after = sim::Time::from_seconds(kDrainRoundTrips * utilization * hw_.dram.latency.seconds());
      // The block scheduler's pace: the first wave fills the SMs' slots at launch; every CTA of
      // the busiest SM beyond those starts one launch.cta_interval after the previous one.
      const std::int64_t per_sm = (k.node->launch.grid.count() + hw_.sm_count - 1) / hw_.sm_count;
      const std::int64_t later = std::max<std::int64_t>(0, per_sm - std::max(1, k.occupancy.ctas_per_sm));
      const sim::Time paced = sim::checked_sum(k.result.start + hw_.launch.kernel_overhead,
                                               sim::checked_product(hw_.launch.cta_interval, later));
      end_after = std::max(end_after, paced - sim_.now());
      end_after = sim::checked_sum(end_after, first_wave_ramp(k));
      sim_.after(end_after, kCompletion, [this, index] {
                   advance();
                   kernel_done(index);
                 });
    }
  }

  // How much later than its first CTAs the last CTAs of a kernel's first wave get going, which a
  // one-wave kernel pays at its end: a cluster launch starts one cluster at a time
  // (launch.cluster_dispatch_interval), and a wave whose prologue loads all miss has them queue
  // one SM after another (dram.first_miss_interval).
  sim::Time first_wave_ramp(const KernelState& k) const {
    const Launch& l = k.node->launch;
    const auto intervals = [](std::int64_t n) { return std::max<std::int64_t>(0, n - 1); };
    sim::Time ramp;
    if (l.cluster_ctas > 0) {
      const std::int64_t slots =
          static_cast<std::int64_t>(hw_.sm_count) * std::max(1, k.occupancy.ctas_per_sm);
      const std::int64_t first_wave = std::min<std::int64_t>(l.grid.count(), slots);
      const std::int64_t clusters = (first_wave + l.cluster_ctas - 1) / l.cluster_ctas;
      ramp = sim::checked_product(hw_.launch.cluster_dispatch_interval, intervals(clusters));
    }
    if (l.prologue_loads && k.result.dram_read_bytes > 0) {
      const std::int64_t sms = std::min<std::int64_t>(l.grid.count(), hw_.sm_count);
      ramp = sim::checked_sum(ramp, sim::checked_product(hw_.dram.first_miss_interval, intervals(sms)));
    }
    return ramp;
  }

  // Seconds of latency-bound occupancy one unit of the cohort's progress holds per CTA:
  // bytes x latency, DRAM bytes at DRAM latency and the rest of its L2 traffic at L2 latency.
  double inflight_seconds(const Cohort& c) const {
    const double loads = c.dram_bytes - c.write_bytes;
    return loads * hw_.dram.latency.seconds() +
           std::max(0.0, c.l2_bytes - loads) * hw_.l2.hit_latency.seconds();
  }

  // Rates for the cohorts streaming now. Memory latency grows with DRAM load, which depends on
  // the rates: a few damped fixed-point steps from the last solution's utilization settle it.
  void recompute_rates() {
    double utilization = dram_utilization_;
    const double first = solve_rates(utilization);
    if (!critical_path_may_bind_) {  // the utilization does not change any rate
      dram_utilization_ = first;
      return;
    }
    utilization = 0.5 * (utilization + first);
    for (int step = 1; step < kLoadedLatencySteps; ++step) {
      utilization = 0.5 * (utilization + solve_rates(utilization));
    }
    dram_utilization_ = solve_rates(utilization);
  }

  // Solves the rates given the DRAM utilization that sets loaded latency; returns the
  // utilization those rates produce.
  double solve_rates(double utilization) {
    critical_path_may_bind_ = false;
    auto& users = users_scratch_;
    users.assign(sms_.size(), std::array<int, kPipeCount>{});
    // Streaming CTAs per SM, which share its schedulers: counted only when some cohort's chain
    // has an issue-bound part (most launches have none).
    auto& resident = resident_scratch_;
    bool any_issue = false;
    for (const int id : active_) {
      any_issue = any_issue || (cohorts_[id].streaming && cohorts_[id].issue_path > 0);
    }
    resident.assign(any_issue ? sms_.size() : 0, 0);
    for (const int id : active_) {
      const Cohort& c = cohorts_[id];
      if (!c.streaming) continue;
      if (any_issue) {
        for (const int sm : c.sms) resident[sm] += c.per_sm;
      }
      for (int p = 0; p < kPipeCount; ++p) {
        if (c.pipe_work[p] <= 0) continue;
        for (const int sm : c.sms) users[sm][p] += c.per_sm;
      }
    }
    // Each streaming cohort's rate alone on the chip's bandwidth, sharing its SM's pipes.
    auto& ids = ids_scratch_;
    auto& uncontended = uncontended_scratch_;
    auto& sm_inflight = sm_inflight_scratch_;  // DRAM bytes in flight each SM would want
    ids.clear();
    uncontended.clear();
    sm_inflight.assign(sms_.size(), 0.0);
    for (const int id : active_) {
      Cohort& c = cohorts_[id];
      if (!c.streaming) continue;
      const std::array<double, kPipeCount> per_sm_rate{
          hw_.tensor_flops_per_cycle(c.tensor_dtype) * clock_hz_, hw_.throughput.fp32 * clock_hz_,
          hw_.throughput.sfu * clock_hz_};
      // Each pipe is shared by the streaming CTAs on the SM; the cohort moves at the pace of its
      // most contended SM.
      std::array<double, kPipeCount> t{};
      for (int p = 0; p < kPipeCount; ++p) {
        if (c.pipe_work[p] <= 0) continue;
        int sharing = 0;
        for (const int sm : c.sms) sharing = std::max(sharing, users[sm][p]);
        t[p] = c.pipe_work[p] * sharing / per_sm_rate[p];
      }
      const double tensor = t[kTensorPipe], simt = std::max(t[kFp32Pipe], t[kSfuPipe]);
      double seconds = std::max(tensor, simt) + (1.0 - c.pipe_overlap) * std::min(tensor, simt);
      // Alone on the chip a CTA still cannot move bytes faster than all of L2 or DRAM.
      seconds = std::max({seconds, c.dram_bytes / hw_.dram.achievable_bandwidth(),
                          c.l2_bytes / hw_.l2.bandwidth, c.link_bytes / capacities_[2],
                          c.network_bytes / capacities_[3], c.activations / capacities_[4]});
      if (c.inflight > 0) {  // Little's law: the CTA's own loads in flight over latency
        // Copies into shared memory (TMA, cp.async) hold a fixed window of stages, each waiting
        // the loaded latency: their pace follows DRAM load as a dependent chain's does. (Loads
        // into registers keep the idle latency here: the SM's miss slots, below, were fitted so.
        // Issue 16's twelfth round: with the loaded latency for them too, the model suites ran
        // 2-6 points worse.)
        double held = inflight_seconds(c);
        if (c.bulk_copies) {
          critical_path_may_bind_ = critical_path_may_bind_ || 2.0 * held / c.inflight > seconds;
          held += utilization * (c.dram_bytes - c.write_bytes) * hw_.dram.latency.seconds();
        }
        seconds = std::max(seconds, held / c.inflight);
      }
      // A dependent chain waits on memory, whose latency grows with DRAM load (queueing): up to
      // twice the idle latency at full bandwidth, from the utilization of the last solution.
      // (At most twice the idle latency: if even that would not bind, utilization is moot.)
      // The chain's issue-bound part waits its turn behind the other CTAs on the SM.
      double waiting = 0;
      if (c.issue_path > 0) {
        int sharing = 0;
        for (const int sm : c.sms) sharing = std::max(sharing, resident[sm]);
        waiting = c.issue_path * std::max(0, sharing - 1);
      }
      critical_path_may_bind_ =
          critical_path_may_bind_ || 2.0 * c.critical_path + waiting > seconds;
      seconds = std::max(seconds, c.critical_path * (1.0 + utilization) + waiting);
      if (seconds <= 0) {  // nothing but fixed latency: done
        c.remaining = 0;
        c.rate = std::numeric_limits<double>::infinity();
        continue;
      }
      ids.push_back(id);
      uncontended.push_back(1.0 / seconds);
      const double wanted =
          c.per_sm * (c.dram_bytes - c.write_bytes) * hw_.dram.latency.seconds() / seconds;
      if (!c.bulk_copies) {
        for (const int sm : c.sms) sm_inflight[sm] += wanted;
      }
    }
    // Little's law per SM: the DRAM misses all its CTAs keep outstanding cannot exceed the SM's
    // limit (L2 hits return fast and do not hold those slots long).
    auto& consumers = consumers_scratch_;
    consumers.clear();
    const double sm_limit = static_cast<double>(hw_.sm.max_inflight_bytes);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const Cohort& c = cohorts_[ids[i]];
      double busiest = 0;
      if (!c.bulk_copies) {
        for (const int sm : c.sms) busiest = std::max(busiest, sm_inflight[sm]);
      }
      const double scale = busiest > sm_limit ? sm_limit / busiest : 1.0;
      consumers.push_back(sim::ShareConsumer{
          uncontended[i] * scale,
          static_cast<double>(c.count),
          {c.dram_bytes, c.l2_bytes, c.link_bytes, c.network_bytes, c.activations}});
    }
    auto& rates = rates_scratch_;
    sim::fair_share_rates(consumers, capacities_, rates);
    double dram_in_use = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const Cohort& c = cohorts_[ids[i]];
      cohorts_[ids[i]].rate = rates[i];
      dram_in_use += rates[i] * c.count * c.dram_bytes;
    }
    return std::min(1.0, dram_in_use / hw_.dram.achievable_bandwidth());
  }

  void schedule_next_completion() {
    double soonest = std::numeric_limits<double>::infinity();
    for (const int id : active_) {
      const Cohort& c = cohorts_[id];
      if (!c.streaming) continue;
      soonest = std::min(soonest, c.rate > 0 ? std::max(0.0, c.remaining) / c.rate : 0.0);
    }
    // Rates changed: the completion expected under the old ones no longer stands.
    if (pending_completion_) sim_.cancel(*pending_completion_);
    pending_completion_.reset();
    if (!std::isfinite(soonest)) return;
    pending_completion_ = sim_.at(sim::checked_sum(sim_.now(), seconds_to_time_ceil(soonest)), kCompletion, [this] {
      pending_completion_.reset();
      advance();
      dirty_ = true;
    });
  }

  const HardwareSpec& hw_;
  LaunchMode mode_;
  EngineObserver* observer_;  // may be null
  KernelOutcomeCache* cache_;  // may be null
  sim::Simulation sim_;
  std::vector<SmState> sms_;
  std::optional<L2Charge> forced_charge_;
  L2ReuseCurve l2_curve_;
  L2Residency l2_;
  L2DirtyLines l2_dirty_;
  std::vector<KernelState> kernels_;
  std::vector<Cohort> cohorts_;
  std::vector<int> active_;       // cohorts with CTAs on an SM
  std::vector<int> dispatching_;  // kernels with CTAs left to place
  std::vector<int> live_;         // kernels started and not finished
  std::vector<int> room_;          // scratch for place_ctas: CTAs each SM can still take
  std::vector<std::int64_t> with_room_;  // scratch: SMs with room for at least r CTAs
  struct Run {  // CTAs of one class given to one SM in one dispatch pass
    int cls, count, sm;
    bool operator<(const Run& o) const { return std::tie(cls, count, sm) < std::tie(o.cls, o.count, o.sm); }
  };
  std::vector<int> run_class_, run_count_;  // scratch for place_ctas, per SM
  std::vector<Run> runs_;                   // scratch for place_ctas
  std::vector<int> taken_;  // scratch: registers one SM's CTAs took, per sub-partition
  std::vector<int> deps_scratch_;  // scratch for prepare
  std::map<std::tuple<std::int64_t, int, std::int64_t>, Occupancy> occupancies_;  // by block resources
  // Scratch for recompute_rates, kept to avoid allocating on every event.
  std::vector<std::array<int, kPipeCount>> users_scratch_;
  std::vector<int> resident_scratch_;
  std::vector<int> ids_scratch_;
  std::vector<double> uncontended_scratch_, sm_inflight_scratch_, rates_scratch_;
  std::vector<sim::ShareConsumer> consumers_scratch_;
  std::vector<double> capacities_;  // DRAM, L2, link and network bandwidth; DRAM row activations
  sim::Time last_advance_;
  std::optional<sim::EventId> pending_completion_;  // the next cohort completion, if any
  double clock_hz_;
  int tensor_heavy_running_ = 0;
  double dram_utilization_ = 0;  // share of DRAM bandwidth in use at the last rate solution
  bool critical_path_may_bind_ = false;  // set by solve_rates
  bool dirty_ = false;
};

}  // namespace

KernelResult launch_result(const HardwareSpec& hw, const Launch& l, const Occupancy& occupancy) {
  KernelResult r;
  r.name = l.name;
  r.family = l.family;
  r.ctas_per_sm = occupancy.ctas_per_sm;
  r.theoretical_occupancy = occupancy.theoretical;
  r.waves = static_cast<double>(l.cta_count()) / (occupancy.ctas_per_sm * hw.sm_count);
  const LaunchTotals t = totals(l);
  r.tensor_flops = t.tensor_flops;
  r.fp32_flops = t.fp32_flops;
  r.sfu_ops = t.sfu_ops;
  r.l2_bytes = t.l2_bytes;
  const double cold_bytes = t.dram_read_bytes + t.dram_write_bytes;
  double tensor_seconds = 0;  // at each class's dtype rate
  for (const auto& c : l.ctas) {
    if (c.work.tensor_flops <= 0) continue;
    tensor_seconds += static_cast<double>(c.count) * c.work.tensor_flops /
                      (hw.tensor_flops_per_cycle(c.work.tensor_dtype) * hw.sm_count * hw.clocks.sustained_tensor_hz);
  }
  // Kernels that keep the tensor pipes busy a large share of their time draw the power that
  // pulls the clock down to its sustained tensor value: those whose tensor time at full rate is
  // at least half their cold DRAM time (attention's softmax phases count as busy too).
  constexpr double kTensorHeavyShareOfDramTime = 0.5;
  r.tensor_heavy = tensor_seconds > 0 &&
                   tensor_seconds >= kTensorHeavyShareOfDramTime * cold_bytes / hw.dram.achievable_bandwidth();
  return r;
}

double achieved_occupancy(const HardwareSpec& hw, double warp_seconds, sim::Time span) {
  const double seconds = span.seconds();
  return seconds > 0 ? warp_seconds / (seconds * hw.sm.max_warps * hw.sm_count) : 0.0;
}

double achieved_occupancy_active(const HardwareSpec& hw, double warp_seconds, double active_sm_seconds) {
  return active_sm_seconds > 0 ? warp_seconds / (active_sm_seconds * hw.sm.max_warps) : 0.0;
}

sim::Time eager_host_gap(const HardwareSpec& hw, const std::optional<sim::Time>& gap, std::int64_t index) {
  if (gap) return *gap;
  return index == 0 ? sim::Time() : hw.launch.eager_gap;
}

EngineResult run_engine(const HardwareSpec& hw, LaunchMode mode,
                        const std::vector<KernelNode>& nodes, EngineObserver* observer,
                        KernelOutcomeCache* cache, L2DirtyLines::Start l2_start) {
  if (cache && !cache->serves(hw)) {
    throw std::logic_error("run_engine: the kernel outcome cache was made for another chip");
  }
  Engine engine(hw, mode, observer, cache, l2_start);
  return engine.run(nodes);
}

SoloOutcome simulate_solo(const HardwareSpec& hw, const Launch& launch, const L2Charge& charge) {
  const std::vector<KernelNode> nodes{KernelNode{launch, {}, 0, {}, std::nullopt}};
  Engine engine(hw, LaunchMode::kGraph, nullptr, nullptr);
  engine.force_l2_charge(charge);
  const EngineResult r = engine.run(nodes);
  const KernelResult& k = r.kernels.front();
  return {k.end - k.start, engine.warp_seconds(0), k.dram_read_bytes, k.dram_write_bytes, r.events - 1,
          engine.active_sm_seconds(0)};
}

}  // namespace gpusim::hw
