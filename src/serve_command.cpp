// `gpusim serve SERVE.yaml --hw NAME|FILE`: requests through a continuous-batching scheduler on
// the simulated chip (serve/). Outputs: a summary table, JSON, per-request CSV, a Chrome trace;
// with --out, all of them, the per-step CSV and a plot.
#include <fmt/format.h>

#include <filesystem>
#include <ostream>
#include <sstream>

#include "sim/error.h"
#include "src/commands.h"
#include "src/options.h"
#include "src/output_files.h"
#include "src/progress.h"
#include "src/serve_request.h"
#include "src/serve_writers.h"

namespace gpusim::cli {

int serve_command(const Args& args, const Environment& env, std::ostream& out, std::ostream& err) {
  namespace po = boost::program_options;
  po::options_description options("serve options");
  std::string hw_name, format = "table";
  std::vector<std::string> sets;
  options.add_options()("help,h", "this text")("serve-file", po::value<std::string>(), "serve file (the positional argument)")(
      "hw", po::value(&hw_name), "hardware preset name or YAML file (required)")(
      "set", po::value(&sets)->composing(),
      "override a field: --set workload.requests.rate=8, --set workload.scheduler.max_num_seqs=64, --set hw.l2.size=100MiB")(
      "format", po::value(&format)->default_value("table"), "table | json | csv (per request)")(
      "out", po::value<std::string>(), "folder to write everything into: summary.txt, result.json, requests.csv, "
                                       "steps.csv, trace.json, serve.png")(
      "trace", po::value<std::string>(), "Chrome trace file to write (scheduler steps, requests, counters)");
  po::positional_options_description positional;
  positional.add("serve-file", 1);
  const auto vm = parse_options(args, options, positional);
  if (vm.count("help")) {
    print_help(out, "gpusim serve SERVE.yaml --hw NAME|FILE [--set KEY=VALUE]... [--format table|json|csv] [--out DIR] [--trace FILE]",
               "Serves a stream of requests (a file, or a seeded generator) with a continuous-batching engine\n"
               "(vLLM V1's scheduler by default) on the simulated chip: every step's batch is lowered to the\n"
               "engine's kernels and simulated. Reports TTFT, TPOT, inter-token and end-to-end latency\n"
               "percentiles, throughput, goodput against the file's SLOs, KV-cache use and preemptions.",
               options);
    return 0;
  }
  if (!vm.count("serve-file")) throw ConfigError("command line", 0, "SERVE", "name a serve file");
  if (!vm.count("hw")) throw ConfigError("command line", 0, "--hw", "required: a preset or YAML file");
  if (format != "table" && format != "json" && format != "csv") {
    throw ConfigError("command line", 0, "--format", "'" + format + "' is not one of: table, json, csv");
  }
  if (vm.count("out")) check_out_folder(vm["out"].as<std::string>());
  ProgressLine progress(env.progress ? &err : nullptr, "serving requests");
  ServeRequest request;
  request.serve_file = vm["serve-file"].as<std::string>();
  request.hw = hw_name;
  request.sets = sets;
  request.on_request = [&progress](std::size_t done, std::size_t total) { progress.update(done, total); };
  const ServeRun run = serve_request(request, env);
  const ServeOutput o = run.output();

  if (vm.count("out")) write_serve_folder(o, vm["out"].as<std::string>(), env, err);
  if (vm.count("trace")) {
    std::ostringstream trace;
    write_serve_trace(o, trace);
    write_file(vm["trace"].as<std::string>(), trace.str());
  }
  if (format == "json") {
    out << serve_json(o);
  } else if (format == "csv") {
    write_serve_requests_csv(o, out);
  } else {
    write_serve_table(o, out);
  }
  return 0;
}

}  // namespace gpusim::cli
