#include "src/sweep_runner.h"

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "hw/hardware_loader.h"
#include "sim/error.h"
#include "src/csv_line.h"
#include "src/mpi_world.h"
#include "src/number_format.h"
#include "src/output_files.h"
#include "src/progress.h"
#include "serve/serve_run.h"
#include "serve/serve_spec.h"
#include "src/simulate_workload.h"

namespace gpusim::cli {
namespace {

constexpr const char* kJournal = "journal.csv";
constexpr const char* kResults = "results.csv";

// A point ready to simulate.
struct ResolvedPoint {
  hw::HardwareSpec hw;
  workloads::Workload workload;  // a run workload (unused for a serve study)
  std::string workload_file;
  std::optional<serve::ServeSpec> serve;  // a serve study's point
};

std::string setting_of(const StudyPoint& p, const std::string& key) {
  for (const auto& s : p.settings) {
    if (s.key == key) return s.value;
  }
  return "";
}

const StudySetting* find_setting(const StudyPoint& p, const std::string& key) {
  for (const auto& s : p.settings) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

ResolvedPoint resolve(const Study& study, const StudyPoint& p, const Environment& env,
                      const hw::PresetCatalog& catalog) {
  std::vector<hw::HardwareOverride> hw_overrides;
  std::vector<workloads::WorkloadOverride> workload_overrides;
  std::string hw_name = study.hw, workload_file = study.workload.string();
  for (const auto& s : p.settings) {
    if (s.key == "hw") hw_name = s.resolved;
    if (s.key == "workload") workload_file = s.resolved;
    if (s.key.rfind("hw.", 0) == 0) hw_overrides.push_back({s.key.substr(3), s.value});
    if (s.key.rfind("workload.", 0) == 0) workload_overrides.push_back({s.key.substr(9), s.value});
  }
  try {
    if (study.serve) {
      return {hw::load_hardware(hw_name, catalog, hw_overrides), workloads::OpWorkload{}, workload_file,
              serve::load_serve_spec(workload_file, workload_overrides, env.config_dir / "engines",
                                     env.config_dir / "models")};
    }
    return {hw::load_hardware(hw_name, catalog, hw_overrides),
            workloads::load_workload(workload_file, workload_overrides, env.config_dir / "models"),
            workload_file, std::nullopt};
  } catch (const ConfigError& e) {
    // An override's value is the point's: name the study's line for it.
    if (e.file() != "command line") throw;
    const StudySetting* s = find_setting(p, e.key());
    throw ConfigError(study.file.string(), s ? s->line : 0, e.key(),
                      fmt::format("{} (point '{}')", e.detail(), p.name));
  }
}

// A fingerprint of everything that decides the results, so a journal is reused only for the
// same study (FNV-1a, stable across runs and machines).
std::string fingerprint(const Study& study) {
  std::string text = fmt::format("{}|{}|{}|{}", GPUSIM_VERSION, study.workload.string(), study.hw,
                                 study.mode == hw::LaunchMode::kEager ? "eager" : "graph");
  for (const auto& m : study.metrics) text += "|" + m;
  for (const auto& p : study.points) {
    text += "|" + p.name;
    for (const auto& s : p.settings) text += ";" + s.key + "=" + s.resolved;
  }
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

// A study metric's value at point `p`: `value(name)` for a plain metric; for METRIC/AXIS, the
// metric's value divided by the point's value of that axis ("" where either is missing).
template <class Value>
std::string metric_or_ratio(const std::string& metric, const StudyPoint& p, const Value& value) {
  const auto slash = metric.find('/');
  if (slash == std::string::npos) return value(metric);
  const std::string base = value(metric.substr(0, slash));
  const std::string axis = setting_of(p, metric.substr(slash + 1));
  if (base.empty() || axis.empty()) return "";
  return number(std::stod(base) / std::stod(axis));
}

// The value of one plain metric for a simulated point ("" where it does not apply); `top` is the
// run's costliest kernel (null when it ran none).
std::string metric_value(const std::string& metric, const RunReport& r, const workloads::Workload& w,
                         const KernelReport* top) {
  const auto* model = std::get_if<workloads::ModelWorkload>(&w);
  const PhaseReport* prefill = nullptr;
  const PhaseReport* decode = nullptr;
  for (const auto& ph : r.phases) (ph.name == "prefill" ? prefill : decode) = &ph;
  if (metric == "total_us") return number(r.total_us);
  if (metric == "kernel_time_us") return number(r.kernel_time_us);
  if (metric == "kernels") {
    std::int64_t n = 0;
    for (const auto& ph : r.phases) n += ph.kernels;
    return std::to_string(r.phases.empty() ? static_cast<std::int64_t>(r.kernels.size()) : n);
  }
  if (metric == "ttft_us") return prefill ? number(prefill->total_us) : "";
  if (metric == "tpot_us") return decode ? number(decode->total_us / static_cast<double>(decode->steps)) : "";
  if (metric == "tokens_per_s") {
    if (r.generation) return number(r.generation->tokens_per_s);
    if (!model) return "";
    if (decode) return number(static_cast<double>(model->batch) * decode->steps / (decode->total_us * 1e-6));
    if (prefill) return number(static_cast<double>(model->batch * model->seq_len) / (prefill->total_us * 1e-6));
    return "";
  }
  if (metric == "memory_bytes") return r.memory ? std::to_string(r.memory->total_bytes) : "";
  if (metric == "fits") return r.memory ? (r.memory->fits ? "true" : "false") : "";
  if (metric == "top_bound") return r.by_bound.empty() ? "" : r.by_bound.front().name;
  if (metric == "top_bound_share_pct") return r.by_bound.empty() ? "" : number(r.by_bound.front().time_share_pct);
  if (!top) return "";
  const hw::KernelMetrics& m = top->metrics;
  if (metric == "top_kernel") return top->name;
  if (metric == "top_kernel_us") return number(m.duration_us);
  if (metric == "top_kernel_ctas") return std::to_string(m.ctas);
  if (metric == "top_kernel_waves") return number(m.waves);
  if (metric == "top_kernel_ctas_per_sm") return std::to_string(m.ctas_per_sm);
  if (metric == "top_kernel_theoretical_occupancy") return number(m.theoretical_occupancy);
  if (metric == "top_kernel_achieved_occupancy") return number(m.achieved_occupancy);
  throw std::logic_error("unknown study metric " + metric);
}

std::vector<std::string> row_of(const Study& study, std::size_t index, const RunReport& r,
                                const workloads::Workload& w) {
  const StudyPoint& p = study.points[index];
  // The costliest single kernel (first of equals).
  const auto top = std::max_element(r.kernels.begin(), r.kernels.end(), [](const KernelReport& a, const KernelReport& b) {
    return a.metrics.duration_us < b.metrics.duration_us;
  });
  const KernelReport* top_kernel = top == r.kernels.end() ? nullptr : &*top;
  std::vector<std::string> row{std::to_string(index), p.name};
  for (const auto& c : study.columns) row.push_back(setting_of(p, c));
  for (const auto& m : study.metrics) {
    row.push_back(metric_or_ratio(m, p, [&](const std::string& name) { return metric_value(name, r, w, top_kernel); }));
  }
  return row;
}

// A serve point's metric (serve_metric_names()).
std::string serve_metric(const std::string& metric, const serve::ServeSummary& s, const serve::ServeResult& r) {
  if (metric == "completed") return std::to_string(s.completed);
  if (metric == "rejected") return std::to_string(s.rejected);
  if (metric == "requests_per_s") return number(s.requests_per_s);
  if (metric == "output_tokens_per_s") return number(s.output_tokens_per_s);
  if (metric == "goodput_requests_per_s") return number(s.goodput_requests_per_s);
  const auto pct = [](const serve::Percentiles& p, double v) { return p.n > 0 ? number(v) : std::string(); };
  if (metric == "ttft_p50_s") return pct(s.ttft_s, s.ttft_s.p50);
  if (metric == "ttft_p90_s") return pct(s.ttft_s, s.ttft_s.p90);
  if (metric == "ttft_p99_s") return pct(s.ttft_s, s.ttft_s.p99);
  if (metric == "tpot_p50_s") return pct(s.tpot_s, s.tpot_s.p50);
  if (metric == "tpot_p90_s") return pct(s.tpot_s, s.tpot_s.p90);
  if (metric == "tpot_p99_s") return pct(s.tpot_s, s.tpot_s.p99);
  if (metric == "itl_p99_s") return pct(s.itl_s, s.itl_s.p99);
  if (metric == "e2e_p50_s") return pct(s.e2e_s, s.e2e_s.p50);
  if (metric == "e2e_p99_s") return pct(s.e2e_s, s.e2e_s.p99);
  if (metric == "queueing_p99_s") return pct(s.queueing_s, s.queueing_s.p99);
  if (metric == "preemptions") return std::to_string(s.preemptions);
  if (metric == "mean_batch") return number(s.mean_batch);
  if (metric == "peak_kv_share") return number(s.peak_kv_share);
  if (metric == "kv_blocks") return std::to_string(r.num_blocks);
  throw std::logic_error("unknown serve metric " + metric);
}

std::vector<std::string> serve_row(const Study& study, std::size_t index, const serve::ServeSpec& spec,
                                   const serve::ServeResult& r) {
  const StudyPoint& p = study.points[index];
  const serve::ServeSummary s = serve::summarize(spec, r);
  std::vector<std::string> row{std::to_string(index), p.name};
  for (const auto& c : study.columns) row.push_back(setting_of(p, c));
  for (const auto& m : study.metrics) {
    row.push_back(metric_or_ratio(m, p, [&](const std::string& name) { return serve_metric(name, s, r); }));
  }
  return row;
}

// Journal lines are result rows with a last field "1": a line cut short by an interruption
// lacks it (or fields), so it is dropped and its point simulated again.
constexpr const char* kCompleteMark = ",1";

// Rows already in the journal (by point index, without the mark) when it belongs to this study.
std::map<std::size_t, std::string> read_journal(const std::filesystem::path& file, const Study& study,
                                                const std::string& print, std::size_t fields) {
  std::map<std::size_t, std::string> done;
  std::ifstream in(file);
  if (!in) return done;
  std::string line;
  std::getline(in, line);
  if (line != "# gpusim study " + print) {
    throw ConfigError(file.string(), 1, "", fmt::format("this folder holds another study's results (not {}); "
                                                        "remove it or choose another --out", study.file.string()));
  }
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const auto split = split_csv_line(line);
    if (!split || split->size() != fields + 1 || split->back() != "1" || split->front().empty() ||
        split->front().find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const auto& f = *split;
    const std::size_t index = std::stoul(f.front());
    if (index < study.points.size() && f[1] == study.points[index].name) {
      done[index] = line.substr(0, line.size() - std::string(kCompleteMark).size());
    }
  }
  return done;
}

// The journal's first lines: the study's fingerprint and the header.
std::string journal_head(const std::string& print, const std::vector<std::string>& header) {
  return "# gpusim study " + print + "\n" + csv_line(header) + ",complete\n";
}

// journal.csv and the journals of MPI ranks (journal.rank<R>.csv), in name order.
std::vector<std::filesystem::path> journal_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::exists(dir / kJournal)) files.push_back(dir / kJournal);
  std::vector<std::filesystem::path> ranks;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("journal.rank", 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == ".csv") {
      ranks.push_back(e.path());
    }
  }
  std::sort(ranks.begin(), ranks.end());
  files.insert(files.end(), ranks.begin(), ranks.end());
  return files;
}

// Rewrites journal.csv with `rows` and removes the ranks' journals (their rows are in `rows`).
void write_journal(const std::filesystem::path& dir, const std::filesystem::path& journal,
                   const std::string& print, const std::vector<std::string>& header,
                   const std::map<std::size_t, std::string>& rows) {
  std::ostringstream kept;
  kept << journal_head(print, header);
  for (const auto& [i, line] : rows) kept << line << kCompleteMark << "\n";
  write_file(journal, kept.str());
  for (const auto& f : journal_files(dir)) {
    if (f != journal) std::filesystem::remove(f);
  }
}

}  // namespace

std::vector<std::string> sweep_header(const Study& study) {
  std::vector<std::string> h{"point", "name"};
  h.insert(h.end(), study.columns.begin(), study.columns.end());
  h.insert(h.end(), study.metrics.begin(), study.metrics.end());
  return h;
}

SweepSummary run_sweep(const Study& study, const Environment& env, const SweepOptions& options) {
  const hw::PresetCatalog catalog = hardware_catalog(env);
  // Points load their hardware and workload files side by side; the first bad one (in point
  // order, whatever the threads did) is the error reported.
  std::vector<std::optional<ResolvedPoint>> loaded(study.points.size());
  std::vector<std::exception_ptr> errors(study.points.size());
  tbb::parallel_for(std::size_t{0}, study.points.size(), [&](std::size_t i) {
    try {
      loaded[i] = resolve(study, study.points[i], env, catalog);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  std::vector<ResolvedPoint> points;
  points.reserve(study.points.size());
  for (auto& p : loaded) points.push_back(std::move(*p));
  for (const auto& m : study.metrics) {  // METRIC/AXIS needs a number on that axis
    const auto slash = m.find('/');
    if (slash == std::string::npos) continue;
    for (const auto& p : study.points) {
      const StudySetting* s = find_setting(p, m.substr(slash + 1));
      const std::string v = s ? s->value : "";
      if (v.empty() || v.find_first_not_of("0123456789.eE+-") != std::string::npos) {
        throw ConfigError(study.file.string(), s ? s->line : 0, "metrics",
                          fmt::format("{} divides by {}, but point '{}' gives it '{}', not a number", m,
                                      m.substr(slash + 1), p.name, v));
      }
    }
  }

  const MpiWorld world;
  std::filesystem::create_directories(options.out_dir);
  const auto header = sweep_header(study);
  const std::string print = fingerprint(study);
  const auto journal_path = options.out_dir / kJournal;
  // Rows of earlier runs: the journal and, after an interrupted MPI run, its ranks' journals.
  std::map<std::size_t, std::string> rows;
  for (const auto& file : journal_files(options.out_dir)) rows.merge(read_journal(file, study, print, header.size()));
  SweepSummary summary;
  summary.root = world.root();
  summary.points = study.points.size();
  summary.reused = rows.size();

  // Under MPI each process takes every size-th pending point, from its rank on.
  std::vector<std::size_t> pending, mine;
  for (std::size_t i = 0; i < study.points.size(); ++i) {
    if (!rows.count(i)) pending.push_back(i);
  }
  for (std::size_t k = static_cast<std::size_t>(world.rank()); k < pending.size(); k += static_cast<std::size_t>(world.size())) {
    mine.push_back(pending[k]);
  }
  // Everyone has read the journals before rank 0 rewrites journal.csv with the rows kept
  // (dropping any cut-short line) and removes the ranks' journals it took them from.
  world.barrier();
  if (world.root()) write_journal(options.out_dir, journal_path, print, header, rows);
  world.barrier();
  // Each process appends to its own journal: journal.csv for rank 0, journal.rank<R>.csv else.
  const auto my_journal = world.root() ? journal_path : options.out_dir / fmt::format("journal.rank{}.csv", world.rank());
  if (!world.root()) write_file(my_journal, journal_head(print, header));
  std::ofstream journal(my_journal, std::ios::app);
  if (!journal) throw ConfigError(my_journal.string(), 0, "", "cannot write this file");
  ProgressLine progress(world.root() ? options.progress : nullptr, fmt::format("study {}", study.name));
  std::mutex lock;
  // Rank 0 shows the points already in the journals and its own share.
  const std::size_t shown = rows.size() + mine.size();
  std::size_t finished = rows.size();
  progress.update(finished, shown);
  const models::KernelModelRegistry models = models::default_kernel_models();
  // Points on one chip share kernel outcomes: each thread keeps a cache per chip it has seen.
  // Cached outcomes are exact, so results do not depend on which thread ran which point.
  tbb::enumerable_thread_specific<hw::KernelOutcomeCaches> caches;
  std::map<std::size_t, std::string> done;  // this process's new rows
  auto simulate = [&](std::size_t k) {
    const std::size_t i = mine[k];
    const ResolvedPoint& p = points[i];
    std::string line;
    if (p.serve) {
      line = csv_line(serve_row(study, i, *p.serve, serve::run_serve(*p.serve, p.hw, models, {}, options.reuse)));
    } else {
      workloads::SimulateOptions sim;
      sim.reuse = options.reuse;
      if (options.reuse) sim.cache = &caches.local().for_chip(p.hw);
      const RunReport r = simulate_workload(p.hw, p.workload, p.workload_file, study.mode, models, sim);
      line = csv_line(row_of(study, i, r, p.workload));
    }
    const std::lock_guard<std::mutex> guard(lock);
    journal << line << kCompleteMark << "\n" << std::flush;
    done[i] = line;
    progress.update(++finished, shown);
  };
  // An error in one process must not leave the others waiting at the gather: its text travels
  // with the rows, and every process then throws (its own error as it was raised).
  std::exception_ptr failure;
  std::string failure_text;
  try {
    std::optional<tbb::global_control> limit;
    if (options.threads > 0) {
      limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(options.threads));
    }
    tbb::parallel_for(std::size_t{0}, mine.size(), simulate);
  } catch (const std::exception& e) {
    failure = std::current_exception();
    failure_text = e.what();
  }
  journal.close();
  summary.simulated = pending.size();

  std::string mine_text = failure ? "error\n" + failure_text : "ok\n";
  if (!failure) {
    for (const auto& [i, line] : done) mine_text += std::to_string(i) + "\t" + line + "\n";
  }
  const auto gathered = world.gather(mine_text);
  if (failure) std::rethrow_exception(failure);
  if (!world.root()) return summary;
  for (const auto& text : gathered) {
    if (text.rfind("error\n", 0) == 0) throw ModelError(text.substr(6));
    std::istringstream in(text.substr(3));
    std::string entry;
    while (std::getline(in, entry)) {
      const auto tab = entry.find('\t');
      rows[std::stoul(entry.substr(0, tab))] = entry.substr(tab + 1);
    }
  }
  // One journal again, as a single process leaves it.
  if (world.size() > 1) write_journal(options.out_dir, journal_path, print, header, rows);

  std::ostringstream csv;
  csv << csv_line(header) << "\n";
  for (const auto& [i, line] : rows) csv << line << "\n";
  summary.csv = options.out_dir / kResults;
  write_file(summary.csv, csv.str());
  return summary;
}

}  // namespace gpusim::cli
