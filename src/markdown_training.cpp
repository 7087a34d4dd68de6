#include "src/markdown_training.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

#include "src/markdown_format.h"

namespace gpusim::cli {
namespace {

// Tokens one step of the cell trains on (every micro-batch).
double step_tokens(const ReportData& d, const GridCell& c) {
  return static_cast<double>(c.batch * c.seq_len * d.model->workload.accumulation_steps);
}

double tokens_per_s(const ReportData& d, const GridCell& c) {
  return step_tokens(d, c) / (c.profile->total_us * 1e-6);
}

std::string row_name(const ReportGrid& g, const GridCell& c, std::size_t index) {
  const std::size_t row = index / g.seq_lens.size();
  return g.models.empty() ? fmt::format("batch {}", c.batch) : fmt::format("{} at batch {}", g.models[row], c.batch);
}

double gemm_share(const StepProfile& p) {
  for (const auto& c : p.categories) {
    if (c.group.name == "gemm") return c.group.time_share_pct;
  }
  return 0;
}

}  // namespace

std::string training_grid_summary(const ReportData& d) {
  const auto& g = d.model->grid;
  std::size_t fastest = 0, best = 0, oom = 0, simulated = 0;
  for (std::size_t i = 0; i < g.prefill.size(); ++i) {
    const GridCell& c = g.prefill[i];
    if (c.status == GridCell::Status::kOutOfMemory) ++oom;
    if (!c.profile) continue;
    if (simulated++ == 0 || c.profile->total_us < g.prefill[fastest].profile->total_us) fastest = i;
    if (simulated == 1 || tokens_per_s(d, c) > tokens_per_s(d, g.prefill[best])) best = i;
  }
  std::string out;
  if (simulated > 0) {
    const GridCell& f = g.prefill[fastest];
    const GridCell& b = g.prefill[best];
    out += fmt::format(" Over the grid, a training step takes from {} ms ({}, {} tokens); the best throughput is {} "
                       "tokens/s ({}, {} tokens)",
                       ms(f.profile->total_us), row_name(g, f, fastest), f.seq_len,
                       grouped(std::llround(tokens_per_s(d, b))), row_name(g, b, best), b.seq_len);
  }
  if (oom > 0) {
    out += fmt::format("{}{} of the {} shapes do not fit in the device's {} MiB", simulated > 0 ? "; " : " ", oom,
                       g.prefill.size(), mib(d.hw.dram.capacity));
  }
  return out.empty() ? out : out + ".";
}

void training_sections(const ReportData& d, std::string& out) {
  const auto& m = *d.model;
  const auto& g = m.grid;
  const auto& w = m.workload;
  std::int64_t weights = 0, state = 0;
  for (const auto& c : g.prefill) {
    if (c.status == GridCell::Status::kTooLong) continue;
    weights = c.memory.weights_bytes;
    state = c.memory.optimizer_state_bytes;
  }
  out += "### 2.1 Peak memory of a training step\n\n";
  out += fmt::format(
      "Peak device memory of one training step ({}): the weights{}, the optimizer state{} and the step's "
      "allocation peak: activations saved for the backward, temporaries and the gradients (alive from "
      "their first writer to their last reader; gradients to the end of the step), plus the KV cache "
      "transformers keeps in training without checkpointing. OOM marks a shape that needs more than "
      "the device's {} MiB, with the MiB it would need; it is not simulated. The CUDA context and the "
      "caching allocator's slack are not counted.\n\n",
      workloads::name(w.optimizer), g.models.empty() ? fmt::format(" ({} MiB)", mib(weights)) : "",
      g.models.empty() ? fmt::format(" ({} MiB)", mib(state)) : "", mib(d.hw.dram.capacity));
  out += fmt::format("Peak memory (MiB), training step, {}\n\n", hw::name(w.dtype));
  out += grid_table(g, [](const GridCell& c) {
    if (c.status == GridCell::Status::kTooLong) return status_text(c);
    return c.status == GridCell::Status::kOutOfMemory ? fmt::format("OOM ({})", mib(c.memory.total_bytes))
                                                      : mib(c.memory.total_bytes);
  });
  out += "\n";

  out += "### 2.2 Step time and throughput\n\n";
  out += fmt::format(
      "One optimizer step{} from its first kernel launch to the end of its last kernel, and the tokens it "
      "trains on per second ({}). The simulator is deterministic: one run per cell.\n\n",
      w.accumulation_steps > 1 ? fmt::format(" ({} micro-batches)", w.accumulation_steps) : "",
      d.mode == "graph" ? "kernels replayed back to back, as a CUDA graph would"
                        : "eager launches, host time included");
  out += fmt::format("Training step (ms), tokens/s, {}\n\n", hw::name(w.dtype));
  out += grid_table(g, [&d](const GridCell& c) {
    return c.profile ? fmt::format("{} ({})", ms(c.profile->total_us), grouped(std::llround(tokens_per_s(d, c))))
                     : status_text(c);
  });
  out += "\n";

  out += "### 2.3 GEMM share of kernel time\n\n";
  out += "The GEMMs' share of a training step's kernel time (seed 002 compares it with inference: the "
         "backward adds elementwise and reduction kernels, so training's share is lower).\n\n";
  out += "GEMM share of kernel time (%), training step\n\n";
  out += grid_table(g, [](const GridCell& c) { return c.profile ? pct(gemm_share(*c.profile)) : status_text(c); });
  out += "\n";
}

}  // namespace gpusim::cli
