#include "workloads/model_run.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <mutex>

#include "workloads/layer_repeat.h"
#include "workloads/pipeline_step.h"

namespace gpusim::workloads {

StepRun run_step_program(StepProgram p, bool detailed, const hw::HardwareSpec& hw, hw::LaunchMode mode,
                 const SimulateOptions& options, hw::KernelOutcomeCache* cache) {
  auto nodes = std::move(p.dag).to_nodes();
  std::optional<hw::TimelineRecorder> recorder;
  if (detailed && options.record_timeline) recorder.emplace(options.record_ctas);
  hw::EngineResult result = hw::run_engine(hw, mode, nodes, recorder ? &*recorder : nullptr, cache);
  StepRun s;
  s.phase = p.phase;
  s.shape = p.shape;
  s.total_us = result.end.us();
  s.kernels = static_cast<std::int64_t>(nodes.size());
  s.events = result.events;
  for (const auto& k : result.kernels) s.kernel_time_us += k.duration().us();
  for (std::size_t i = 0; i < p.phase_starts.size(); ++i) {
    const std::size_t first = p.phase_starts[i].second;
    const std::size_t last = i + 1 < p.phase_starts.size() ? p.phase_starts[i + 1].second : result.kernels.size();
    PhaseSplit split{p.phase_starts[i].first};
    sim::Time begin = sim::Time::from_ps(std::numeric_limits<std::int64_t>::max()), end;
    for (std::size_t v = first; v < last && v < result.kernels.size(); ++v) {
      const auto& k = result.kernels[v];
      ++split.kernels;
      split.kernel_time_us += k.duration().us();
      begin = std::min(begin, k.start);
      end = std::max(end, k.end);
    }
    if (split.kernels > 0) {
      split.total_us = (end - begin).us();
      split.end_us = end.us();
    }
    // Micro-batches repeat the forward and backward: one split per name, summed.
    auto same = std::find_if(s.phase_splits.begin(), s.phase_splits.end(),
                             [&](const PhaseSplit& x) { return x.name == split.name; });
    if (same == s.phase_splits.end()) {
      s.phase_splits.push_back(std::move(split));
    } else {
      same->kernels += split.kernels;
      same->kernel_time_us += split.kernel_time_us;
      same->total_us += split.total_us;
      same->end_us = std::max(same->end_us, split.end_us);
    }
  }
  if (detailed) {
    s.detail = StepDetail{std::move(nodes), std::move(result), std::nullopt};
    if (recorder) s.detail->timeline = recorder->take();
  }
  return s;
}

namespace {

// The first step of each phase and the last step keep their kernels.
bool detailed_step(const std::vector<std::pair<std::string, StepShape>>& shapes, std::size_t i) {
  return i == 0 || shapes[i - 1].first != shapes[i].first || i + 1 == shapes.size();
}

}  // namespace

hw::KernelOutcomeCache* outcome_cache(const SimulateOptions& options, const hw::HardwareSpec& hw,
                                      std::optional<hw::KernelOutcomeCache>& own) {
  if (!options.reuse) return nullptr;
  if (options.cache && options.cache->serves(hw)) return options.cache;
  return &own.emplace(hw);
}

MemoryFootprint steps_footprint(const ModelWorkload& w, const std::vector<StepProgram>& steps,
                                const hw::HardwareSpec& hw) {
  double activation_peak = 0;
  for (const auto& s : steps) activation_peak = std::max(activation_peak, s.activation_peak_bytes);
  return memory_footprint(w, activation_peak, hw);
}

// Steps are lowered one at a time and dropped once simulated, so a long generate run holds one
// step's program per thread. Each step starts on an idle chip with a cold L2, so steps are
// independent: with more than one, they run side by side (contiguous runs of steps per thread,
// each thread with its own caches, which are exact), and the results are the same whatever the
// thread count. With a caller's cache (a study's point, already in parallel) they run in order.
ModelRun simulate_model(const ModelWorkload& w, const hw::HardwareSpec& hw, hw::LaunchMode mode,
                        const models::KernelModelRegistry& models, const SimulateOptions& options) {
  const auto shapes = step_shapes(w);
  std::vector<StepRun> runs(shapes.size());
  std::vector<double> peaks(shapes.size(), 0.0);
  std::mutex progress_lock;
  std::size_t done = 0;
  auto step = [&](std::size_t i, OpLoweringCache& lowering, hw::KernelOutcomeCache* cache) {
    const bool detailed = detailed_step(shapes, i);
    SimulatedStep one = w.parallel.pipeline > 1 && !w.rank_view
                            ? simulate_pipeline_step(w, shapes[i].first, shapes[i].second, detailed, lowering, hw, mode,
                                                     options, cache)
                            : simulate_one_step(w, shapes[i].first, shapes[i].second, detailed, lowering, hw, mode,
                                                options, cache);
    peaks[i] = one.activation_peak_bytes;
    runs[i] = std::move(one.run);
    if (options.on_step) {
      const std::lock_guard guard(progress_lock);
      options.on_step(++done, shapes.size());
    }
  };
  if (shapes.size() < 2 || options.cache || !options.parallel_steps) {
    std::optional<hw::KernelOutcomeCache> own_cache;
    hw::KernelOutcomeCache* cache = outcome_cache(options, hw, own_cache);
    OpLoweringCache lowering(hw, models);
    for (std::size_t i = 0; i < shapes.size(); ++i) step(i, lowering, cache);
  } else {
    struct Worker {
      OpLoweringCache lowering;
      std::optional<hw::KernelOutcomeCache> cache;
    };
    tbb::enumerable_thread_specific<Worker> workers([&] {
      return Worker{OpLoweringCache(hw, models), options.reuse ? std::optional(hw::KernelOutcomeCache(hw)) : std::nullopt};
    });
    // A step that fails (a kernel the chip cannot run) is reported as the serial run would: the
    // first failing step's error, whichever thread met it first.
    std::vector<std::exception_ptr> errors(shapes.size());
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, shapes.size()),
        [&](const tbb::blocked_range<std::size_t>& range) {
          Worker& me = workers.local();
          for (std::size_t i = range.begin(); i != range.end(); ++i) {
            try {
              step(i, me.lowering, me.cache ? &*me.cache : nullptr);
            } catch (...) {
              errors[i] = std::current_exception();
              return;  // the rest of this thread's steps would fail alike or not be reported
            }
          }
        },
        tbb::static_partitioner());
    for (const auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  }
  ModelRun run;
  run.steps = std::move(runs);
  run.memory = memory_footprint(w, *std::max_element(peaks.begin(), peaks.end()), hw);
  return run;
}

SimulatedStep simulate_one_step(const ModelWorkload& w, const std::string& phase, const StepShape& shape, bool detailed,
                                OpLoweringCache& lowering, const hw::HardwareSpec& hw, hw::LaunchMode mode,
                                const SimulateOptions& options, hw::KernelOutcomeCache* cache) {
  // A step with a recorded timeline needs the engine's CTA-level events.
  // A training step's backward runs its layers in reverse after the forward's: not a run of
  // repeating layers, so it is simulated whole.
  if (cache && !(detailed && options.record_timeline) && w.phase != Phase::kTrain) {
    if (auto extended = simulate_repeating_layers(w, phase, shape, lowering, mode, *cache, detailed)) {
      return {std::move(extended->run), extended->activation_peak_bytes};
    }
  }
  StepProgram p = build_step(w, phase, shape, lowering);
  const double peak = p.activation_peak_bytes;
  return {run_step_program(std::move(p), detailed, hw, mode, options, cache), peak};
}

StepRun simulate_step(const ModelWorkload& w, const std::string& phase, const StepShape& shape, OpLoweringCache& lowering,
                      const hw::HardwareSpec& hw, hw::LaunchMode mode, hw::KernelOutcomeCache* cache) {
  if (cache) {
    if (auto extended = simulate_repeating_layers(w, phase, shape, lowering, mode, *cache)) return std::move(extended->run);
  }
  SimulateOptions options;
  options.reuse = cache != nullptr;
  return run_step_program(build_step(w, phase, shape, lowering), false, hw, mode, options, cache);
}

ModelRun simulate_steps(const ModelWorkload& w, std::vector<StepProgram> steps, const hw::HardwareSpec& hw,
                        hw::LaunchMode mode, const SimulateOptions& options) {
  std::optional<hw::KernelOutcomeCache> own_cache;
  hw::KernelOutcomeCache* cache = outcome_cache(options, hw, own_cache);
  std::vector<std::pair<std::string, StepShape>> shapes;
  for (const auto& p : steps) shapes.emplace_back(p.phase, p.shape);
  ModelRun run;
  run.memory = steps_footprint(w, steps, hw);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    run.steps.push_back(run_step_program(std::move(steps[i]), detailed_step(shapes, i), hw, mode, options, cache));
    if (options.on_step) options.on_step(i + 1, steps.size());
  }
  return run;
}

}  // namespace gpusim::workloads
