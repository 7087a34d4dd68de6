#include "validation/seed_suites.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <variant>

#include "hw/kernel_metrics.h"
#include "sim/error.h"
#include "validation/csv.h"
#include "workloads/model_run.h"
#include "workloads/workload.h"

namespace gpusim::validation {
namespace {

using models::Op;
using models::OpKind;

double error_pct(double simulated, double reference) {
  return 100.0 * (simulated - reference) / reference;
}

// One op simulated alone on an idle GPU with a cold L2: the summed kernel durations, the span
// from the first launch to the last kernel's end (eager mode: host launch gaps included), and
// the kernel names.
struct OpRun {
  double kernel_us = 0, total_us = 0;
  std::vector<std::string> kernels;
};

OpRun simulate_op(const Op& op, const std::string& label, const hw::HardwareSpec& hw,
                  hw::LaunchMode mode, const models::KernelModelRegistry& models) {
  std::vector<hw::KernelNode> nodes;
  for (auto& l : models.lower(op, hw, "op")) nodes.push_back({std::move(l), label, 0, {}, std::nullopt});
  const hw::EngineResult r = hw::run_engine(hw, mode, nodes);
  OpRun out;
  for (const auto& k : r.kernels) {
    out.kernel_us += k.duration().us();
    out.kernels.push_back(k.name);
  }
  out.total_us = r.end.us();
  return out;
}

std::int64_t integer(const CsvTable& t, std::size_t row, const std::string& column) {
  const double v = t.number(row, column);
  if (v != std::floor(v) || v <= 0) {
    throw ConfigError(t.file().string(), t.line_of(row), column, "expected a positive integer");
  }
  return static_cast<std::int64_t>(v);
}

// A comparison of a reported out-of-memory status with a simulated one, coded 1 (does not fit)
// and 0 (fits): error 0 when they agree, 100 when they do not.
Comparison fits_row(MeasuredOp ref, bool reported_oom, bool simulated_fits) {
  Comparison c;
  ref.measured_us = reported_oom ? 1 : 0;
  c.reference = std::move(ref);
  c.simulated_us = simulated_fits ? 0 : 1;
  c.error_pct = reported_oom == !simulated_fits ? 0.0 : 100.0;
  return c;
}

MeasuredOp reference(std::string label, std::string family) {
  MeasuredOp m;
  m.label = std::move(label);
  m.family = std::move(family);
  m.held_out = true;  // nothing in gpusim was fitted to the seeds' figures
  return m;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Nsight Systems' kernel summary, which seed 003's shares come from, lists kernels only, not
// memcpy or memset activities.
bool is_kernel(const std::string& name) { return !name.starts_with("Memcpy") && !name.starts_with("Memset"); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

// --- seed 001 -------------------------------------------------------------------------------

std::vector<Comparison> compare_seed001(const std::filesystem::path& data_dir,
                                        const hw::HardwareSpec& h100,
                                        const models::KernelModelRegistry& models) {
  const CsvTable t = CsvTable::read(data_dir / "seed001_sdpa_h100.csv");
  std::vector<Comparison> out;
  std::vector<std::int64_t> grid;  // heads of the per-head rows, for the own-measurement set
  auto sdpa = [&](const CsvTable& t, std::size_t row, std::int64_t heads) {
    if (t.at(row, "dtype") != "fp16") {
      throw ConfigError(t.file().string(), t.line_of(row), "dtype", "seed 001 ran fp16");
    }
    return Op(OpKind::kSdpa, hw::DType::kFp16,
              models::SdpaShape{integer(t, row, "batch"), heads, integer(t, row, "seq_len"),
                                integer(t, row, "head_dim"), t.at(row, "causal") == "1"});
  };
  for (std::size_t row = 0; row < t.rows(); ++row) {
    if (t.at(row, "compare") == "none") continue;
    const std::int64_t heads = integer(t, row, "heads");
    const Op op = sdpa(t, row, heads);
    const std::string shape = fmt::format("sdpa fp16 B={} H={} S={} D={}", t.at(row, "batch"), heads,
                                          t.at(row, "seq_len"), t.at(row, "head_dim"));
    const OpRun run = simulate_op(op, shape, h100, hw::LaunchMode::kGraph, models);
    const std::string metric = t.at(row, "metric");
    Comparison c;
    if (metric == "per_head_latency") {
      c.reference = reference(shape + ": per-head latency (us), PyTorch 2.4", "seed001-reported");
      c.simulated_us = run.kernel_us / static_cast<double>(heads);
      grid.push_back(heads);
    } else if (metric == "total_latency") {
      c.reference = reference(shape + ": total latency (us), PyTorch 2.4", "seed001-reported");
      c.simulated_us = run.kernel_us;
    } else {
      throw ConfigError(t.file().string(), t.line_of(row), "metric", "unknown metric '" + metric + "'");
    }
    c.reference.measured_us = t.number(row, "value");
    c.simulated_kernels = run.kernels;
    c.error_pct = error_pct(c.simulated_us, c.reference.measured_us);
    out.push_back(std::move(c));
  }
  // The same shapes measured by the project (validation/data/ops_h100.csv, op `sdpa`: PyTorch's
  // default backend, L2 flushed, median of 20): per head as well.
  const auto measured = read_measured_ops(data_dir / "ops_h100.csv");
  for (const std::int64_t heads : grid) {
    const std::string label = fmt::format("sdpa fp16 B=16 H={} S=512 D=64 causal=0", heads);
    const auto m = std::find_if(measured.begin(), measured.end(),
                                [&](const MeasuredOp& o) { return o.label == label; });
    if (m == measured.end() || !m->op) {
      throw ConfigError((data_dir / "ops_h100.csv").string(), 0, "op",
                        "no measured '" + label + "' for seed 001's grid");
    }
    const OpRun run = simulate_op(*m->op, label, h100, hw::LaunchMode::kGraph, models);
    Comparison c;
    c.reference = reference(fmt::format("sdpa fp16 B=16 H={} S=512 D=64: per-head latency (us), own", heads),
                            "seed001-own-measurement");
    c.reference.measured_us = m->measured_us / static_cast<double>(heads);
    c.reference.measured_kernels = m->measured_kernels;
    c.simulated_us = run.kernel_us / static_cast<double>(heads);
    c.simulated_kernels = run.kernels;
    c.error_pct = error_pct(c.simulated_us, c.reference.measured_us);
    out.push_back(std::move(c));
  }
  return out;
}

// --- seed 002 -------------------------------------------------------------------------------

namespace {

// The CS336 model as seed 002 ran it: whole sequences in fp32, the cs336_basics code's own
// kernels (workloads/cs336_lowering.cpp; a training step: workloads/cs336_train_lowering.cpp,
// forward and backward without an optimizer step, as the benchmark times them).
workloads::ModelWorkload cs336_workload(const CsvTable& t, std::size_t row, bool train,
                                        const std::filesystem::path& models_dir) {
  const std::string yaml = fmt::format(
      "model: {}\nphase: {}\nbatch: {}\nseq_len: {}\ndtype: fp32\nlowering: cs336-basics\n{}", t.at(row, "preset"),
      train ? "train" : "prefill", integer(t, row, "batch"), integer(t, row, "seq_len"), train ? "optimizer: none\n" : "");
  const auto parsed = workloads::parse_workload(
      yaml, fmt::format("{} line {}", t.file().filename().string(), t.line_of(row)), {}, models_dir);
  return std::get<workloads::ModelWorkload>(parsed);
}

// The simulated step's wall time (every step's total) and kernel names.
void step_time(const workloads::ModelRun& run, Comparison& c) {
  for (const auto& step : run.steps) {
    c.simulated_us += step.total_us;
    if (step.detail) {
      for (const auto& k : step.detail->result.kernels) c.simulated_kernels.push_back(k.name);
    }
  }
}

// Device memory a forward with autograd recording needs at its peak: the weights and the
// activations alive at the forward phase's peak of the training step (the tensors autograd saves
// for the backward stay alive to the end of the forward; the loss adds a few T x V tensors).
double forward_with_autograd_bytes(const workloads::ModelWorkload& train, const hw::HardwareSpec& hw,
                                   const models::KernelModelRegistry& models) {
  const auto steps = workloads::build_steps(train, hw, models);
  const auto& p = steps.front();
  if (p.phase_starts.size() < 2 || p.phase_starts[1].first != "backward") {
    throw ModelError("seed 002: a training step without a backward phase");
  }
  double peak = 0;
  for (std::size_t v = p.phase_starts[0].second; v < p.phase_starts[1].second; ++v) {
    peak = std::max(peak, p.activation_profile[v]);
  }
  return static_cast<double>(workloads::memory_footprint(train, 0, hw).weights_bytes) + peak;
}

}  // namespace

std::vector<Comparison> compare_seed002_forward(const std::filesystem::path& csv,
                                                const std::filesystem::path& models_dir,
                                                const hw::HardwareSpec& rtx5090,
                                                const models::KernelModelRegistry& models) {
  const CsvTable t = CsvTable::read(csv);
  std::vector<Comparison> out;
  for (std::size_t row = 0; row < t.rows(); ++row) {
    const std::string how = t.at(row, "compare");
    if (how == "none") continue;
    const std::string pass = t.at(row, "pass");
    if (pass != "fwd" && pass != "fwd+bwd") {
      throw ConfigError(csv.string(), t.line_of(row), "pass", "expected fwd or fwd+bwd, not '" + pass + "'");
    }
    const bool train = pass == "fwd+bwd";
    const auto w = cs336_workload(t, row, train, models_dir);
    const std::string shape = fmt::format("{} b{} s{} fp32 naive", t.at(row, "preset"),
                                          t.at(row, "batch"), t.at(row, "seq_len"));
    const bool oom = t.at(row, "status") == "OOM";
    if (how == "time") {
      if (t.at(row, "unit") != "s") throw ConfigError(csv.string(), t.line_of(row), "unit", "expected s");
      // The seed's step times are Python wall times around the call (host launch cost included):
      // eager mode.
      const auto run = workloads::simulate_model(w, rtx5090, hw::LaunchMode::kEager, models);
      Comparison c;
      c.reference = reference(shape + (train ? ": fwd+bwd step (us, eager)" : ": fwd step (us, eager)"),
                              train ? "seed002-train" : "seed002-forward");
      c.reference.measured_us = t.number(row, "avg_step") * 1e6;
      step_time(run, c);
      c.error_pct = error_pct(c.simulated_us, c.reference.measured_us);
      out.push_back(std::move(c));
    } else if (how == "fits") {
      // A forward with autograd on keeps what the backward would read; a forward and backward
      // step peaks with the gradients as well (no optimizer state: the benchmark steps none).
      const double capacity = static_cast<double>(rtx5090.dram.capacity);
      double bytes = 0;
      if (train) {
        bytes = static_cast<double>(
            workloads::steps_footprint(w, workloads::build_steps(w, rtx5090, models), rtx5090).total_bytes);
      } else {
        bytes = forward_with_autograd_bytes(cs336_workload(t, row, true, models_dir), rtx5090, models);
      }
      out.push_back(fits_row(
          reference(fmt::format("{}: {} OOM=1 (reported {}; gpusim {:.1f} of {:.1f} GB{})", shape, pass,
                                t.at(row, "status"), bytes / 1e9, capacity / 1e9,
                                train ? "" : " with autograd's saved activations"),
                    "seed002-oom"),
          oom, bytes <= capacity));
    } else {
      throw ConfigError(csv.string(), t.line_of(row), "compare", "unknown comparison '" + how + "'");
    }
  }
  return out;
}

std::vector<Comparison> compare_seed002_gemm_share(const std::filesystem::path& csv,
                                                   const std::filesystem::path& models_dir,
                                                   const hw::HardwareSpec& rtx5090,
                                                   const models::KernelModelRegistry& models) {
  const CsvTable t = CsvTable::read(csv);
  std::vector<Comparison> out;
  for (std::size_t row = 0; row < t.rows(); ++row) {
    const std::string how = t.at(row, "compare");
    if (how == "none") continue;
    if (how != "share") throw ConfigError(csv.string(), t.line_of(row), "compare", "unknown comparison '" + how + "'");
    if (t.at(row, "unit") != "%") throw ConfigError(csv.string(), t.line_of(row), "unit", "expected %");
    const std::string pass = t.at(row, "pass");
    if (pass != "inference" && pass != "training") {
      throw ConfigError(csv.string(), t.line_of(row), "pass", "expected inference or training, not '" + pass + "'");
    }
    const bool train = pass == "training";
    // Nsight's kernel summary: kernel time only (graph mode leaves the host out of the spans,
    // not of the kernels' durations).
    const auto run =
        workloads::simulate_model(cs336_workload(t, row, train, models_dir), rtx5090, hw::LaunchMode::kGraph, models);
    const auto& detail = *run.steps.front().detail;
    double gemm = 0, all = 0;
    Comparison c;
    for (std::size_t i = 0; i < detail.result.kernels.size(); ++i) {
      const auto& k = detail.result.kernels[i];
      const std::string& family = detail.nodes[i].launch.family;
      all += k.duration().us();
      // cuBLAS's matrix products: the GEMM kernels, their split-K reductions, GEMVs.
      if (family == "gemm" || family == "gemm_splitk_reduce" || family == "gemv") gemm += k.duration().us();
      c.simulated_kernels.push_back(k.name);
    }
    c.reference = reference(fmt::format("{} b{} s{} fp32: GEMM share of {} kernel time (%)", t.at(row, "preset"),
                                        t.at(row, "batch"), t.at(row, "seq_len"),
                                        train ? "forward+backward" : "forward"),
                            "seed002-gemm-share");
    c.reference.measured_us = t.number(row, "value");
    c.simulated_us = 100.0 * gemm / all;
    c.error_pct = error_pct(c.simulated_us, c.reference.measured_us);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Comparison> compare_seed002_attention(const std::filesystem::path& csv,
                                                  const hw::HardwareSpec& a100,
                                                  const models::KernelModelRegistry& models) {
  const CsvTable t = CsvTable::read(csv);
  std::vector<Comparison> out;
  for (std::size_t row = 0; row < t.rows(); ++row) {
    const std::string how = t.at(row, "compare");
    if (how == "none") continue;
    const std::string pass = t.at(row, "pass");
    if (t.at(row, "dtype") != "fp32" || (pass != "forward" && pass != "backward")) {
      throw ConfigError(csv.string(), t.line_of(row), "pass", "expected an fp32 forward or backward pass");
    }
    const bool backward = pass == "backward";
    const std::int64_t B = integer(t, row, "batch"), H = integer(t, row, "heads");
    const std::int64_t S = integer(t, row, "seq_len"), D = integer(t, row, "d_model");
    const std::string shape = fmt::format("naive_attention fp32 B={} H={} S={} D={}", B, H, S, D);
    if (how == "time") {
      if (t.at(row, "unit") != "ms") throw ConfigError(csv.string(), t.line_of(row), "unit", "expected ms");
      // No causal mask: the seed's memory accounting has no mask tensor (README-seeds.md). The
      // softmax written out (amax, subtract, exp, sum, divide), as the seed's code does; the
      // backward pass is autograd's kernels from the output's gradient.
      models::NaiveAttentionShape a{B, H, S, D, false};
      a.manual_softmax = true;
      a.backward = backward;
      const Op op(OpKind::kNaiveAttention, hw::DType::kFp32, a);
      // Wall time of the call (host launch cost included, flat 0.61 ms at S=256): eager mode,
      // first launch to last kernel end.
      const OpRun run = simulate_op(op, shape, a100, hw::LaunchMode::kEager, models);
      Comparison c;
      c.reference = backward ? reference(shape + ": bwd (us, eager, a100)", "seed002-attention-backward")
                             : reference(shape + ": fwd (us, eager, a100)", "seed002-attention");
      c.reference.measured_us = t.number(row, "value") * 1e3;
      c.simulated_us = run.total_us;
      c.simulated_kernels = run.kernels;
      c.error_pct = error_pct(c.simulated_us, c.reference.measured_us);
      out.push_back(std::move(c));
    } else if (how == "fits") {
      if (backward) throw ConfigError(csv.string(), t.line_of(row), "compare", "fits rows are forward passes");
      // The seed's own accounting of what the forward pass keeps alive for backward (its
      // "Memory Accounting" table, which matched the measured 24.9 GB at S=16384): three
      // B x H x S x S fp32 tensors (scores, the custom softmax's exp, the weights) plus the
      // input, q, k, v and the output (B x S x D fp32 each), against the device's capacity.
      const double bytes = 3.0 * B * H * S * S * 4 + 5.0 * B * S * D * 4;
      const bool fits = bytes <= static_cast<double>(a100.dram.capacity);
      out.push_back(fits_row(
          reference(fmt::format("{}: fwd OOM=1 (reported {}; needs {:.1f} of {:.1f} GB)", shape,
                                t.at(row, "status"), bytes / 1e9, a100.dram.capacity / 1e9),
                    "seed002-oom"),
          t.at(row, "status").starts_with("OOM"), fits));
    } else {
      throw ConfigError(csv.string(), t.line_of(row), "compare", "unknown comparison '" + how + "'");
    }
  }
  return out;
}

// --- seed 003 -------------------------------------------------------------------------------

std::string seed003_category(const std::string& name) {
  const std::string n = lower(name);
  if (contains(n, "flash_fwd") || contains(n, "fmha") || contains(n, "sdpa") || contains(n, "attention")) {
    return "flash_attention";
  }
  if (contains(n, "catarraybatchedcopy")) return "cat";
  if (contains(n, "copy_kernel") || n.starts_with("memcpy")) return "memory_ops";
  if (contains(n, "prepare_grouped_gemm")) return "other";  // a setup kernel, not a product
  if (contains(n, "gemv") || contains(n, "gemm") || contains(n, "xmma") || contains(n, "nvjet")) return "gemv";
  if (contains(n, "elementwise_kernel") && !contains(n, "index_elementwise_kernel")) return "elementwise";
  return "other";
}

std::vector<Comparison> compare_seed003(const std::filesystem::path& csv,
                                        const std::filesystem::path& workload,
                                        const std::filesystem::path& models_dir,
                                        const hw::HardwareSpec& rtx5090,
                                        const models::KernelModelRegistry& models) {
  const CsvTable t = CsvTable::read(csv);
  const auto parsed = workloads::load_workload(workload, {}, models_dir);
  const auto* w = std::get_if<workloads::ModelWorkload>(&parsed);
  if (!w || w->phase != workloads::Phase::kDecode) {
    throw ConfigError(workload.string(), 0, "phase", "seed 003 needs a model workload in phase decode");
  }
  // Shares are of kernel time, so the launch mode hardly matters; graph mode keeps host gaps out.
  const auto run = workloads::simulate_model(*w, rtx5090, hw::LaunchMode::kGraph, models);
  if (run.steps.size() != 1 || !run.steps.front().detail) {
    throw ModelError("seed 003: expected one decode step with its kernels");
  }
  const auto& detail = *run.steps.front().detail;

  // Memcpy and memset activities are left out of the total as well as the categories.
  struct PerName {
    double us = 0, occupancy_sum = 0;
    int launches = 0;
    std::map<std::string, double> us_by_class;      // seed 003's rule (classify_seed003)
    std::map<std::string, double> us_by_own_class;  // gpusim's rule, latency included
  };
  std::map<std::string, double> by_category;
  std::map<std::string, PerName> by_name;
  double total = 0;
  for (std::size_t i = 0; i < detail.result.kernels.size(); ++i) {
    const auto& k = detail.result.kernels[i];
    if (!is_kernel(k.name)) continue;
    const double us = k.duration().us();
    total += us;
    by_category[seed003_category(k.name)] += us;
    PerName& p = by_name[k.name];
    p.us += us;
    // The seed's "Achieved Occupancy" is Nsight Compute's: warps over the active cycles of the
    // SMs that ran the kernel (issue 21), not over the whole chip for the kernel's span.
    p.occupancy_sum += k.achieved_occupancy_active;
    ++p.launches;
    // Counted by the seed's own rule, so the count rows compare like with like; gpusim's rule
    // (what reports call "bound") is shown beside them.
    const hw::KernelMetrics m = hw::kernel_metrics(rtx5090, detail.nodes[i].launch, k);
    p.us_by_class[std::string(hw::name(hw::classify_seed003(m)))] += us;
    p.us_by_own_class[std::string(hw::name(m.bound))] += us;
  }
  if (total <= 0) throw ModelError("seed 003: the decode step ran no kernels");

  // The 20 costliest kernel names (the seed profiled its top 20 with Nsight Compute): each
  // counted in the class that holds most of its time; occupancy as the plain mean over names of
  // each name's mean over its launches (the seed's per-class and overall means are unweighted).
  std::vector<std::pair<std::string, const PerName*>> names;
  for (const auto& [name, p] : by_name) names.emplace_back(name, &p);
  std::stable_sort(names.begin(), names.end(),
                   [](const auto& a, const auto& b) { return a.second->us > b.second->us; });
  if (names.size() > 20) names.resize(20);
  const auto costliest = [](const std::map<std::string, double>& us) {
    const auto less = [](const auto& a, const auto& b) { return a.second < b.second; };
    return std::max_element(us.begin(), us.end(), less)->first;
  };
  std::map<std::string, int> class_count, own_count;
  double occupancy = 0;
  for (const auto& [name, p] : names) {
    ++class_count[costliest(p->us_by_class)];
    ++own_count[costliest(p->us_by_own_class)];
    occupancy += 100.0 * p->occupancy_sum / p->launches;
  }
  const auto own = [&](const char* cls) {
    const auto it = own_count.find(cls);
    return it == own_count.end() ? 0 : it->second;
  };
  occupancy /= static_cast<double>(names.size());

  static const std::map<std::string, std::string> kCategoryOf{
      {"category_gemv", "gemv"},
      {"category_elementwise", "elementwise"},
      {"category_flash_attention", "flash_attention"},
      {"category_memory_ops", "memory_ops"},
      {"category_cat", "cat"}};
  static const std::map<std::string, std::string> kClassOf{
      {"memory-bound", "memory"}, {"compute-bound", "compute"}, {"balanced", "balanced"}};
  std::vector<Comparison> out;
  for (std::size_t row = 0; row < t.rows(); ++row) {
    const std::string how = t.at(row, "compare");
    if (how == "none") continue;
    const std::string id = t.at(row, "id"), name = t.at(row, "name");
    Comparison c;
    if (how == "share") {
      const auto cat = kCategoryOf.find(id);
      if (cat == kCategoryOf.end()) {
        throw ConfigError(csv.string(), t.line_of(row), "id", "no kernel category for '" + id + "'");
      }
      c.reference = reference(name + ": share of decode kernel time (%)", "seed003-shares");
      const auto it = by_category.find(cat->second);
      c.simulated_us = 100.0 * (it == by_category.end() ? 0.0 : it->second) / total;
      for (const auto& k : detail.result.kernels) {
        if (is_kernel(k.name) && seed003_category(k.name) == cat->second) c.simulated_kernels.push_back(k.name);
      }
    } else if (how == "count") {
      const auto cls = kClassOf.find(name);
      if (cls == kClassOf.end()) {
        throw ConfigError(csv.string(), t.line_of(row), "name", "unknown class '" + name + "'");
      }
      // gpusim's own count of the class in the label, out of the error: its rule is not the seed's.
      const std::string own_text =
          cls->second == "balanced"
              ? fmt::format("balanced {}, latency {}", own("balanced"), own("latency"))
              : fmt::format("{}", own(cls->second.c_str()));
      c.reference = reference(fmt::format("{} kernels of the top {} (count, seed's rule; "
                                          "gpusim's rule: {})",
                                          name, names.size(), own_text),
                              "seed003-classes");
      const auto it = class_count.find(cls->second);
      c.simulated_us = it == class_count.end() ? 0 : it->second;
      for (const auto& [kernel, p] : names) c.simulated_kernels.push_back(kernel);
    } else if (how == "occupancy") {
      c.reference = reference(fmt::format("achieved occupancy, plain mean of the top {} (%)", names.size()),
                              "seed003-occupancy");
      c.simulated_us = occupancy;
      for (const auto& [kernel, p] : names) c.simulated_kernels.push_back(kernel);
    } else {
      throw ConfigError(csv.string(), t.line_of(row), "compare", "unknown comparison '" + how + "'");
    }
    c.reference.measured_us = t.number(row, "value");
    c.error_pct = error_pct(c.simulated_us, c.reference.measured_us);
    out.push_back(std::move(c));
  }
  return out;
}

int seed_rows_not_compared(const std::filesystem::path& csv) {
  const CsvTable t = CsvTable::read(csv);
  int n = 0;
  for (std::size_t row = 0; row < t.rows(); ++row) n += t.at(row, "compare") == "none" ? 1 : 0;
  return n;
}

}  // namespace gpusim::validation
