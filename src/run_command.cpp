// `gpusim run WORKLOAD.yaml --hw NAME|FILE`: loads and validates both files (with `--set`
// overrides) and says what it would run. The discrete-event engine and the kernel models
// arrive with the next issues; until then no latency is reported, and nothing pretends to be.
#include <fmt/format.h>

#include <ostream>

#include "hw/hardware_loader.h"
#include "sim/error.h"
#include "src/commands.h"
#include "src/options.h"
#include "workloads/plan_summary.h"
#include "workloads/workload.h"

namespace gpusim::cli {
namespace {

std::vector<workloads::WorkloadOverride> workload_overrides(const std::vector<Override>& all) {
  std::vector<workloads::WorkloadOverride> out;
  for (const auto& o : all) {
    if (o.target == "workload") out.push_back({o.key, o.value});
  }
  return out;
}

std::string hardware_line(const hw::HardwareSpec& s) {
  return fmt::format("{} SMs at {:.2f} GHz, {} MiB L2, {} {:.2f} TB/s, {:.0f} GB", s.sm_count,
                     s.clocks.boost_hz / 1e9, s.l2.size / (1024 * 1024), s.dram.kind,
                     s.dram.bandwidth / 1e12, static_cast<double>(s.dram.capacity) / 1e9);
}

}  // namespace

int run_command(const Args& args, const Environment& env, std::ostream& out) {
  po::options_description options("run options");
  std::string hw_name, mode = "graph", format = "table";
  std::vector<std::string> sets;
  options.add_options()("help,h", "this text")(
      "workload", po::value<std::string>(), "workload YAML file (the positional argument)")(
      "hw", po::value(&hw_name), "hardware preset name or YAML file (required)")(
      "set", po::value(&sets)->composing(),
      "override one field: --set hw.l2.size=128MiB, --set workload.batch=32")(
      "mode", po::value(&mode)->default_value("graph"), "graph (CUDA-graph replay) | eager")(
      "format", po::value(&format)->default_value("table"), "table | json | csv")(
      "out", po::value<std::string>(), "folder to write every output format into")(
      "trace", po::value<std::string>(), "Chrome trace file to write");
  po::positional_options_description positional;
  positional.add("workload", 1);
  const auto vm = parse_options(args, options, positional);
  if (vm.count("help")) {
    print_help(out,
               "gpusim run WORKLOAD.yaml --hw NAME|FILE [--set KEY=VALUE]... [--mode graph|eager]\n"
               "           [--format table|json|csv] [--out DIR] [--trace FILE.json]",
               "Simulates a workload (ops or a model phase) on a GPU.", options);
    return 0;
  }
  if (!vm.count("workload")) throw ConfigError("command line", 0, "WORKLOAD", "name a workload file");
  if (!vm.count("hw")) throw ConfigError("command line", 0, "--hw", "required: a preset or YAML file");
  if (mode != "graph" && mode != "eager") {
    throw ConfigError("command line", 0, "--mode", "'" + mode + "' is not one of: graph, eager");
  }
  if (format != "table" && format != "json" && format != "csv") {
    throw ConfigError("command line", 0, "--format", "'" + format + "' is not one of: table, json, csv");
  }

  const auto overrides = parse_overrides(sets);
  const hw::PresetCatalog catalog(env.config_dir / "hw");
  const hw::HardwareSpec spec = hw::load_hardware(hw_name, catalog, hardware_overrides(overrides));
  const std::string workload_file = vm["workload"].as<std::string>();
  const workloads::Workload workload = workloads::load_workload(
      workload_file, workload_overrides(overrides), env.config_dir / "models");

  out << "hardware: " << spec.name << " (" << hardware_line(spec) << ")\n";
  out << "workload: " << workload_file << "\n";
  out << workloads::describe_workload(workload);
  out << "mode:     " << mode << "\n\n";
  out << "Both files are valid. Not simulated: this version has no discrete-event engine or\n"
         "kernel models yet, so it reports no latency (they land with the engine issue).\n";
  return 0;
}

}  // namespace gpusim::cli
