// `gpusim run WORKLOAD.yaml --hw NAME|FILE`: loads and validates both files (with `--set`
// overrides), simulates the workload (src/run_request.h) and writes the results.
#include <fmt/format.h>

#include <filesystem>
#include <ostream>
#include <sstream>

#include "sim/error.h"
#include "src/commands.h"
#include "src/options.h"
#include "src/output_files.h"
#include "src/progress.h"
#include "src/report_writers.h"
#include "src/run_report.h"
#include "src/run_request.h"

namespace gpusim::cli {
namespace {

template <class Writer>
std::string render(const RunReport& report, Writer writer) {
  std::ostringstream s;
  writer(report, s);
  return s.str();
}

}  // namespace

int run_command(const Args& args, const Environment& env, std::ostream& out, std::ostream& err) {
  po::options_description options("run options");
  std::string hw_name, mode = "graph", format = "table";
  std::vector<std::string> sets;
  int top = 15;
  options.add_options()("help,h", "this text")(
      "workload", po::value<std::string>(), "workload YAML file (the positional argument)")(
      "hw", po::value(&hw_name), "hardware preset name or YAML file (required)")(
      "set", po::value(&sets)->composing(),
      "override one field: --set hw.l2.size=128MiB, --set workload.batch=32")(
      "mode", po::value(&mode)->default_value("graph"), "graph (CUDA-graph replay) | eager")(
      "format", po::value(&format)->default_value("table"), "table | json | csv")(
      "out", po::value<std::string>(), "folder to write every format into: summary.txt, result.json, kernels.csv, trace.json")(
      "trace", po::value<std::string>(), "Chrome trace file to write (Perfetto, chrome://tracing)")(
      "trace-ctas", "the trace also gets one track per SM with its CTA groups (large files)")(
      "top", po::value(&top)->default_value(15), "kernels the table lists (0: all)")(
      "no-cache", "simulate every kernel from scratch instead of replaying outcomes simulated "
                  "before (to check the caches: the same results, slower)");
  po::positional_options_description positional;
  positional.add("workload", 1);
  const auto vm = parse_options(args, options, positional);
  if (vm.count("help")) {
    print_help(out,
               "gpusim run WORKLOAD.yaml --hw NAME|FILE [--set KEY=VALUE]... [--mode graph|eager]\n"
               "           [--format table|json|csv] [--out DIR] [--trace FILE.json [--trace-ctas]]\n"
               "           [--top N] [--no-cache]",
               "Simulates a workload (ops or a model phase) on a GPU.", options);
    return 0;
  }
  if (!vm.count("workload")) throw ConfigError("command line", 0, "WORKLOAD", "name a workload file");
  if (!vm.count("hw")) throw ConfigError("command line", 0, "--hw", "required: a preset or YAML file");
  if (mode != "graph" && mode != "eager") {
    throw ConfigError("command line", 0, "--mode", "'" + mode + "' is not one of: graph, eager");
  }
  if (top < 0) throw ConfigError("command line", 0, "--top", "must be 0 (all) or more");
  if (vm.count("trace-ctas") && !vm.count("trace") && !vm.count("out")) {
    throw ConfigError("command line", 0, "--trace-ctas", "needs --trace FILE.json or --out DIR");
  }
  if (format != "table" && format != "json" && format != "csv") {
    throw ConfigError("command line", 0, "--format", "'" + format + "' is not one of: table, json, csv");
  }

  if (vm.count("out")) check_out_folder(vm["out"].as<std::string>());
  ProgressLine progress(env.progress ? &err : nullptr, "simulating steps");
  RunRequest request;
  request.workload_file = vm["workload"].as<std::string>();
  request.hw = hw_name;
  request.sets = sets;
  request.mode = mode == "eager" ? hw::LaunchMode::kEager : hw::LaunchMode::kGraph;
  request.simulate.record_timeline = vm.count("trace") > 0 || vm.count("out") > 0;
  request.simulate.record_ctas = vm.count("trace-ctas") > 0;
  request.simulate.reuse = vm.count("no-cache") == 0;
  request.simulate.on_step = [&progress](std::size_t done, std::size_t total) { progress.update(done, total); };
  const RunReport report = run_request(request, env, err);

  // Everything is computed before anything is written.
  if (vm.count("out")) write_run_folder(report, vm["out"].as<std::string>(), top);
  if (vm.count("trace")) write_file(vm["trace"].as<std::string>(), render(report, write_chrome_trace));
  if (format == "json") {
    write_json(report, out);
  } else if (format == "csv") {
    write_csv(report, out);
  } else {
    write_table(report, out, top);
  }
  return 0;
}

}  // namespace gpusim::cli
