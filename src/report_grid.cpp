#include "src/report_grid.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "workloads/model_run.h"

namespace gpusim::cli {
namespace {

std::vector<TopKernel> top_kernels(const RunReport& r, std::size_t count) {
  std::vector<TopKernel> top;
  for (const auto& g : merge_identical_launches(r.kernels)) {
    if (top.size() == count) break;
    const KernelReport& k = *g.first;
    top.push_back({k.name, k.op, k.category, std::string(hw::name(k.metrics.bound)), g.launches, g.time_us,
                   r.kernel_time_us > 0 ? 100 * g.time_us / r.kernel_time_us : 0, k.metrics.sm_throughput_pct,
                   k.metrics.dram_throughput_pct});
  }
  return top;
}

// Each category's time split by bound class; the class holding most of it names the category.
std::vector<CategoryRow> category_rows(const RunReport& r) {
  std::map<std::string, std::map<std::string, double>> split;
  for (const auto& k : r.kernels)
    split[k.category][std::string(hw::name(k.metrics.bound))] += k.metrics.duration_us;
  std::vector<CategoryRow> rows;
  for (const auto& g : r.by_category) {
    CategoryRow row{g, "", 0};
    for (const auto& [bound, time] : split[g.name]) {
      const double share = g.time_us > 0 ? 100 * time / g.time_us : 0;
      if (row.main_bound.empty() || share > row.main_bound_share_pct) {
        row.main_bound = bound;
        row.main_bound_share_pct = share;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

StepProfile profile_step(const RunReport& r) {
  StepProfile p;
  p.total_us = r.total_us;
  p.kernel_time_us = r.kernel_time_us;
  p.kernels = static_cast<std::int64_t>(r.kernels.size());
  p.band_source = r.band_source;
  p.total_low_us = r.total_low_us;
  p.total_high_us = r.total_high_us;
  p.kernels_outside_bands = r.kernels_outside_bands;
  double listed_time = 0, warp_time = 0;
  std::map<std::string, BoundTotals> bounds;
  for (const auto& k : r.kernels) {
    const hw::KernelMetrics& m = k.metrics;
    listed_time += m.duration_us;
    warp_time += m.achieved_warps_per_sm * m.duration_us;
    p.dram_bytes += m.dram_bytes;
    p.flops += m.flops;
    p.tensor_flops += m.tensor_flops;
    if (m.arithmetic_intensity > 0 && m.flops_per_s > 0) ++p.roofline_points;
    BoundTotals& b = bounds[std::string(hw::name(m.bound))];
    ++b.kernels;
    b.time_us += m.duration_us;
    b.dram_bytes += m.dram_bytes;
    b.flops += m.flops;
    b.tensor_flops += m.tensor_flops;
  }
  // Generate runs list only some steps' kernels: the time-weighted figures are over those.
  if (listed_time > 0) p.achieved_warps_per_sm = warp_time / listed_time;
  p.categories = category_rows(r);
  p.by_bound = r.by_bound;
  for (const auto& g : r.by_bound) {
    BoundTotals b = bounds[g.name];
    b.bound = g.name;
    b.share_pct = g.time_share_pct;
    p.bounds.push_back(b);
  }
  p.top = top_kernels(r, 10);
  return p;
}

GridCell run_grid_cell(const workloads::ModelWorkload& base, workloads::Phase phase,
                       std::int64_t batch, std::int64_t seq_len, const hw::HardwareSpec& hw,
                       hw::LaunchMode mode, const models::KernelModelRegistry& models,
                       const workloads::SimulateOptions& simulate) {
  GridCell cell;
  cell.batch = batch;
  cell.seq_len = seq_len;
  workloads::ModelWorkload w = base;
  w.phase = phase;
  w.batch = batch;
  w.seq_len = seq_len;
  w.output_len.reset();
  // As the workload reader does: learned position tables bound the sequence.
  if (w.model.max_positions && seq_len > *w.model.max_positions) {
    cell.status = GridCell::Status::kTooLong;
    return cell;
  }
  // Sizing needs the step programs (their activation peak) but no simulation; the same steps
  // are then simulated when they fit.
  auto steps = workloads::build_steps(w, hw, models);
  cell.memory = workloads::steps_footprint(w, steps, hw);
  if (!cell.memory.fits) {
    cell.status = GridCell::Status::kOutOfMemory;
    return cell;
  }
  cell.profile =
      profile_step(make_model_report(hw, w, mode, workloads::simulate_steps(w, std::move(steps), hw, mode, simulate)));
  return cell;
}

ReportGrid run_report_grid(const workloads::ModelWorkload& base, const hw::HardwareSpec& hw,
                           const models::KernelModelRegistry& models, const GridOptions& options) {
  ReportGrid grid;
  const bool training = base.phase == workloads::Phase::kTrain;
  const bool by_model = !options.model_rows.empty();
  grid.training = training;
  grid.seq_lens = options.seq_lens;
  grid.decode_seq_len = options.decode_seq_len;
  if (by_model) {
    for (const auto& w : options.model_rows) {
      grid.models.push_back(w.model.name);
      grid.batches.push_back(w.batch);
    }
  } else {
    grid.batches = options.batches;
  }
  const std::size_t prefill_cells = grid.batches.size() * grid.seq_lens.size();
  const std::size_t total = prefill_cells + (training ? 0 : grid.batches.size());
  const workloads::Phase grid_phase = training ? workloads::Phase::kTrain : workloads::Phase::kPrefill;
  // Every cell writes only its own slot; nothing else is shared but read-only inputs.
  std::vector<GridCell> cells(total);
  std::size_t done = 0;
  std::mutex progress_mutex;
  // Cells share kernel outcomes, one cache per thread; outcomes are exact, so the cells do not
  // depend on which thread ran them.
  tbb::enumerable_thread_specific<hw::KernelOutcomeCache> caches(hw);
  tbb::parallel_for(std::size_t{0}, total, [&](std::size_t i) {
    workloads::SimulateOptions simulate;
    simulate.reuse = options.reuse;
    if (options.reuse) simulate.cache = &caches.local();
    if (i < prefill_cells) {
      const std::size_t row = i / grid.seq_lens.size();
      cells[i] = run_grid_cell(by_model ? options.model_rows[row] : base, grid_phase, grid.batches[row],
                               grid.seq_lens[i % grid.seq_lens.size()], hw, options.mode, models, simulate);
    } else {
      cells[i] = run_grid_cell(base, workloads::Phase::kDecode, grid.batches[i - prefill_cells],
                               grid.decode_seq_len, hw, options.mode, models, simulate);
    }
    // Counted under the lock too, so the progress shown never steps back.
    const std::lock_guard lock(progress_mutex);
    ++done;
    if (options.on_cell) options.on_cell(done, total);
  });
  grid.prefill.assign(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(prefill_cells));
  grid.decode.assign(cells.begin() + static_cast<std::ptrdiff_t>(prefill_cells), cells.end());
  return grid;
}

}  // namespace gpusim::cli
