// `gpusim replay TRACE --hw NAME|FILE [--from NAME]`: a PyTorch profiler trace re-simulated on a
// chip. The trace's op instances are mapped to cost models (replay/kernel_mapping.h) and run on
// the engine in their recorded stream order; the results are `gpusim run`'s, plus the
// per-family comparison of recorded and simulated time and the coverage (the share of recorded
// kernel time mapped to models). Replaying on the chip the trace was recorded on is a self-check.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "hw/gpu_engine.h"
#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "replay/kernel_mapping.h"
#include "replay/profiler_trace.h"
#include "replay/replay_run.h"
#include "sim/error.h"
#include "src/commands.h"
#include "src/number_format.h"
#include "src/options.h"
#include "src/output_files.h"
#include "src/report_writers.h"
#include "src/run_report.h"

namespace gpusim::cli {
namespace {

// Recorded vs simulated time of one mapping family (or of the unmapped kernels).
struct FamilyRow {
  std::string family;
  std::int64_t ops = 0, kernels = 0;
  double recorded_us = 0, simulated_us = 0;
};

// An unmapped kernel name with its count and recorded time.
struct UnmappedRow {
  std::string name, op, why;
  std::int64_t count = 0;
  double recorded_us = 0;
};

// One op instance: recorded and simulated time.
struct OpRow {
  std::string op, family, first_kernel;
  bool mapped = false;
  double recorded_us = 0, simulated_us = 0;
};

struct ReplaySummary {
  std::string trace, recorded_on, from, target, mode;
  double recorded_span_us = 0, simulated_total_us = 0;
  std::vector<OpRow> ops;
  double recorded_kernel_us = 0, mapped_recorded_us = 0;
  std::vector<FamilyRow> families;
  std::vector<UnmappedRow> unmapped;
  double coverage_pct() const { return recorded_kernel_us > 0 ? 100.0 * mapped_recorded_us / recorded_kernel_us : 0; }
};

ReplaySummary summarize(const replay::RecordedTrace& trace, const std::vector<replay::MappedGroup>& groups,
                        const std::vector<double>& simulated_us, const std::string& from) {
  ReplaySummary s;
  s.trace = trace.file;
  s.recorded_on = trace.device_name;
  s.from = from;
  std::map<std::string, FamilyRow> fam;
  std::map<std::string, UnmappedRow> un;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& grp = groups[g];
    s.recorded_kernel_us += grp.recorded_us;
    if (grp.mapped) s.mapped_recorded_us += grp.recorded_us;
    s.ops.push_back({grp.op, grp.family, trace.activities[grp.activities.front()].name, grp.mapped, grp.recorded_us,
                     simulated_us[g]});
    FamilyRow& r = fam[grp.family];
    r.family = grp.family;
    r.ops += 1;
    r.kernels += static_cast<std::int64_t>(grp.activities.size());
    r.recorded_us += grp.recorded_us;
    r.simulated_us += simulated_us[g];
    if (!grp.mapped) {
      for (std::size_t a : grp.activities) {
        const auto& act = trace.activities[a];
        UnmappedRow& u = un[act.name];
        u.name = act.name;
        u.op = grp.op;
        u.why = grp.why;
        u.count += 1;
        u.recorded_us += act.duration_us;
      }
    }
  }
  for (auto& [k, v] : fam) s.families.push_back(v);
  std::sort(s.families.begin(), s.families.end(), [](const FamilyRow& a, const FamilyRow& b) {
    return a.recorded_us != b.recorded_us ? a.recorded_us > b.recorded_us : a.family < b.family;
  });
  for (auto& [k, v] : un) s.unmapped.push_back(v);
  std::sort(s.unmapped.begin(), s.unmapped.end(), [](const UnmappedRow& a, const UnmappedRow& b) {
    return a.recorded_us != b.recorded_us ? a.recorded_us > b.recorded_us : a.name < b.name;
  });
  return s;
}

std::string pct(double sim, double rec) { return rec > 0 ? fmt::format("{:+.1f}%", 100.0 * (sim / rec - 1.0)) : "-"; }

void write_replay_table(const ReplaySummary& s, std::ostream& out) {
  out << fmt::format("\nreplay of {} (recorded on {}{})\n", s.trace, s.recorded_on.empty() ? "an unnamed device" : s.recorded_on,
                     s.from.empty() ? "" : ", --from " + s.from);
  out << fmt::format("coverage: {:.1f}% of the recorded kernel time ({:.1f} of {:.1f} us) mapped to models\n",
                     s.coverage_pct(), s.mapped_recorded_us, s.recorded_kernel_us);
  if (s.mode == "as-recorded") {
    out << fmt::format("span: recorded {:.1f} us (first launch call to last activity end), simulated {:.1f} us ({})\n",
                       s.recorded_span_us, s.simulated_total_us, pct(s.simulated_total_us, s.recorded_span_us));
  }
  out << fmt::format("Recorded kernel time (on {}) vs simulated (on {}) by mapping family\n",
                     s.recorded_on.empty() ? "the recording chip" : s.recorded_on, s.target);
  out << fmt::format("  {:<20s} {:>6s} {:>8s} {:>13s} {:>13s} {:>8s}\n", "family", "ops", "kernels", "recorded(us)",
                     "simulated(us)", "diff");
  double rec = 0, sim = 0;
  for (const auto& r : s.families) {
    out << fmt::format("  {:<20s} {:>6d} {:>8d} {:>13.1f} {:>13.1f} {:>8s}\n", r.family, r.ops, r.kernels, r.recorded_us,
                       r.simulated_us, pct(r.simulated_us, r.recorded_us));
    rec += r.recorded_us;
    sim += r.simulated_us;
  }
  out << fmt::format("  {:<20s} {:>6s} {:>8s} {:>13.1f} {:>13.1f} {:>8s}\n", "all", "", "", rec, sim, pct(sim, rec));
  if (s.unmapped.empty()) return;
  out << "Unmapped kernels (carried over with their recorded durations, scaled to the target chip)\n";
  std::size_t shown = 0;
  for (const auto& u : s.unmapped) {
    if (++shown > 15) {
      out << fmt::format("  ... and {} more kernel names (--format json lists them all)\n", s.unmapped.size() - 15);
      break;
    }
    out << fmt::format("  {:>5d} x {:>10.1f} us  {:5.1f}%  {} [{}: {}]\n", u.count, u.recorded_us,
                       100.0 * u.recorded_us / std::max(1e-9, s.recorded_kernel_us), u.name.substr(0, 90), u.op, u.why);
  }
}

nlohmann::ordered_json replay_json(const ReplaySummary& s) {
  nlohmann::ordered_json j;
  j["trace"] = s.trace;
  j["recorded_on"] = s.recorded_on;
  j["from"] = s.from;
  j["target"] = s.target;
  j["recorded_kernel_time_us"] = s.recorded_kernel_us;
  j["recorded_span_us"] = s.recorded_span_us;
  j["coverage_pct"] = s.coverage_pct();
  j["families"] = nlohmann::ordered_json::array();
  for (const auto& r : s.families) {
    j["families"].push_back({{"family", r.family}, {"ops", r.ops}, {"kernels", r.kernels}, {"recorded_us", r.recorded_us},
                             {"simulated_us", r.simulated_us}});
  }
  j["unmapped"] = nlohmann::ordered_json::array();
  for (const auto& u : s.unmapped) {
    j["unmapped"].push_back({{"name", u.name}, {"op", u.op}, {"why", u.why}, {"count", u.count}, {"recorded_us", u.recorded_us}});
  }
  j["ops"] = nlohmann::ordered_json::array();
  for (const auto& o : s.ops) {
    j["ops"].push_back({{"op", o.op}, {"family", o.family}, {"mapped", o.mapped}, {"first_kernel", o.first_kernel},
                        {"recorded_us", o.recorded_us}, {"simulated_us", o.simulated_us}});
  }
  return j;
}

std::string render_json(const RunReport& report, const ReplaySummary& s) {
  nlohmann::ordered_json j = report_json(report);
  j["replay"] = replay_json(s);
  round_numbers(j);
  return dump_json(j, 2) + "\n";
}

}  // namespace

int replay_command(const Args& args, const Environment& env, std::ostream& out, std::ostream& /*err*/) {
  namespace po = boost::program_options;
  po::options_description options("replay options");
  std::string hw_name, from, mode = "graph", format = "table", dtype;
  std::vector<std::string> sets;
  int top = 15;
  options.add_options()("help,h", "this text")(
      "trace-file", po::value<std::string>(), "profiler trace (the positional argument; .json, .json.gz, or an nsys .sqlite export)")(
      "hw", po::value(&hw_name), "hardware preset name or YAML file to replay on (required)")(
      "from", po::value(&from), "the preset of the chip the trace was recorded on (scales unmapped kernels)")(
      "set", po::value(&sets)->composing(), "override one hardware field: --set hw.l2.size=128MiB")(
      "mode", po::value(&mode)->default_value("graph"),
      "graph (kernels back to back in stream order) | eager (issued one by one at the target's launch gap) | "
      "as-recorded (issued with the trace's recorded host gaps)")(
      "format", po::value(&format)->default_value("table"), "table | json | csv")(
      "out", po::value<std::string>(), "folder to write every format into: summary.txt, result.json, kernels.csv, trace.json")(
      "trace", po::value<std::string>(), "Chrome trace file to write of the simulated replay")(
      "top", po::value(&top)->default_value(15), "kernels the table lists (0: all)")(
      "dtype", po::value(&dtype),
      "Nsight Systems exports only (NVTX records no types): bf16 | fp16 | fp32 for ops whose kernels' names "
      "name no type (default: the type most of the trace's kernels name)");
  po::positional_options_description positional;
  positional.add("trace-file", 1);
  const auto vm = parse_options(args, options, positional);
  if (vm.count("help")) {
    print_help(out,
               "gpusim replay TRACE.json[.gz]|REPORT.sqlite --hw NAME|FILE [--from NAME] [--set KEY=VALUE]...\n"
               "              [--mode graph|eager|as-recorded] [--format table|json|csv] [--out DIR]\n"
               "              [--trace OUT.json] [--top N]",
               "Re-simulates a PyTorch profiler trace (torch.profiler with record_shapes=True, exported with\n"
               "export_chrome_trace), or an Nsight Systems SQLite export of a program run under\n"
               "torch.autograd.profiler.emit_nvtx(record_shapes=True), on a chip: each recorded op is mapped\n"
               "to its cost model with the op's recorded shapes; what cannot be mapped is carried over with\n"
               "its recorded duration.",
               options);
    return 0;
  }
  if (!vm.count("trace-file")) throw ConfigError("command line", 0, "TRACE", "name a profiler trace file");
  if (!vm.count("hw")) throw ConfigError("command line", 0, "--hw", "required: a preset or YAML file");
  if (mode != "graph" && mode != "eager" && mode != "as-recorded") {
    throw ConfigError("command line", 0, "--mode", "'" + mode + "' is not one of: graph, eager, as-recorded");
  }
  if (format != "table" && format != "json" && format != "csv") {
    throw ConfigError("command line", 0, "--format", "'" + format + "' is not one of: table, json, csv");
  }
  if (top < 0) throw ConfigError("command line", 0, "--top", "must be 0 (all) or more");
  const auto overrides = parse_overrides(sets);
  if (!workload_overrides(overrides).empty()) {
    throw ConfigError("command line", 0, "--set", "replay takes hardware overrides only (hw.KEY=VALUE)");
  }
  const hw::PresetCatalog catalog = hardware_catalog(env);
  const hw::HardwareSpec spec = hw::load_hardware(hw_name, catalog, hardware_overrides(overrides));
  std::optional<hw::HardwareSpec> from_spec;
  if (!from.empty()) from_spec = hw::load_hardware(from, catalog, {});
  if (vm.count("out")) check_out_folder(vm["out"].as<std::string>());

  static const std::map<std::string, std::string> kTypes = {{"bf16", "c10::BFloat16"}, {"fp16", "c10::Half"}, {"fp32", "float"}};
  if (!dtype.empty() && !kTypes.count(dtype)) {
    throw ConfigError("command line", 0, "--dtype", "'" + dtype + "' is not one of: bf16, fp16, fp32");
  }
  const replay::RecordedTrace trace = replay::read_trace(vm["trace-file"].as<std::string>(), dtype.empty() ? "" : kTypes.at(dtype));
  if (!dtype.empty() && trace.scalars_recorded) {
    throw ConfigError("command line", 0, "--dtype", "only for Nsight Systems exports: a profiler trace records its types");
  }
  const auto models = models::default_kernel_models();
  const auto replay_mode = mode == "eager"         ? replay::ReplayMode::kEager
                           : mode == "as-recorded" ? replay::ReplayMode::kAsRecorded
                                                   : replay::ReplayMode::kGraph;
  const replay::ReplayRun run = replay::run_replay(trace, spec, from_spec ? &*from_spec : nullptr, models, replay_mode);
  const auto& groups = run.groups;
  const auto& nodes = run.nodes;
  const hw::EngineResult& result = run.result;
  const std::vector<double>& simulated = run.group_us;
  RunReport report = make_report(spec, std::filesystem::path(trace.file).filename().string(),
                                 replay_mode == replay::ReplayMode::kGraph ? hw::LaunchMode::kGraph : hw::LaunchMode::kEager,
                                 nodes, result);
  report.mode = mode;
  ReplaySummary summary = summarize(trace, groups, simulated, from);
  summary.target = spec.name;
  summary.mode = mode;
  summary.recorded_span_us = replay::recorded_span_us(trace);
  summary.simulated_total_us = report.total_us;

  const auto table = [&](std::ostream& s) {
    write_table(report, s, top);
    write_replay_table(summary, s);
  };
  if (vm.count("out")) {
    const std::filesystem::path dir = vm["out"].as<std::string>();
    std::filesystem::create_directories(dir);
    std::ostringstream t;
    table(t);
    write_file(dir / "summary.txt", t.str());
    write_file(dir / "result.json", render_json(report, summary));
    std::ostringstream c, tr;
    write_csv(report, c);
    write_file(dir / "kernels.csv", c.str());
    write_chrome_trace(report, tr);
    write_file(dir / "trace.json", tr.str());
  }
  if (vm.count("trace")) {
    std::ostringstream tr;
    write_chrome_trace(report, tr);
    write_file(vm["trace"].as<std::string>(), tr.str());
  }
  if (format == "json") {
    out << render_json(report, summary);
  } else if (format == "csv") {
    write_csv(report, out);
  } else {
    table(out);
  }
  return 0;
}

}  // namespace gpusim::cli
