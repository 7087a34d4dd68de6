// `gpusim run WORKLOAD.yaml --hw NAME|FILE`: loads and validates both files (with `--set`
// overrides), lowers an op-level workload to kernels, simulates them and writes the results.
// Model-level workloads (transformer phases) are lowered step by step to kernel DAGs.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "hw/gpu_engine.h"
#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "src/commands.h"
#include "src/options.h"
#include "src/output_files.h"
#include "src/progress.h"
#include "src/report_writers.h"
#include "src/run_report.h"
#include "workloads/model_run.h"
#include "workloads/op_lowering.h"
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

// A dtype the chip has no tensor-core rate for (fp8 before Hopper/Ada) is bad input.
void check_model_dtype(const workloads::ModelWorkload& w, const hw::HardwareSpec& s,
                       const std::string& file) {
  const bool tensor_only = w.dtype == hw::DType::kFp8 || w.dtype == hw::DType::kTf32;
  if (tensor_only && s.tensor_flops_per_cycle(w.dtype) <= 0) {
    throw ConfigError(file, 0, "dtype",
                      fmt::format("{} has no {} tensor cores (hardware key throughput.tensor_{} is 0)",
                                  s.name, hw::name(w.dtype), hw::name(w.dtype)));
  }
}

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
      "top", po::value(&top)->default_value(15), "kernels the table lists (0: all)");
  po::positional_options_description positional;
  positional.add("workload", 1);
  const auto vm = parse_options(args, options, positional);
  if (vm.count("help")) {
    print_help(out,
               "gpusim run WORKLOAD.yaml --hw NAME|FILE [--set KEY=VALUE]... [--mode graph|eager]\n"
               "           [--format table|json|csv] [--out DIR] [--trace FILE.json [--trace-ctas]]\n"
               "           [--top N]",
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

  const auto overrides = parse_overrides(sets);
  const hw::PresetCatalog catalog(env.config_dir / "hw");
  const hw::HardwareSpec spec = hw::load_hardware(hw_name, catalog, hardware_overrides(overrides));
  const std::string workload_file = vm["workload"].as<std::string>();
  const workloads::Workload workload = workloads::load_workload(
      workload_file, workload_overrides(overrides), env.config_dir / "models");

  if (vm.count("out") && std::filesystem::exists(vm["out"].as<std::string>()) &&
      !std::filesystem::is_directory(vm["out"].as<std::string>())) {
    throw ConfigError("command line", 0, "--out", "'" + vm["out"].as<std::string>() + "' is not a folder");
  }

  const auto launch_mode = mode == "eager" ? hw::LaunchMode::kEager : hw::LaunchMode::kGraph;
  const auto models = models::default_kernel_models();
  const bool record_timeline = vm.count("trace") > 0 || vm.count("out") > 0;
  const bool record_ctas = vm.count("trace-ctas") > 0;
  RunReport report;
  if (const auto* ops = std::get_if<workloads::OpWorkload>(&workload)) {
    const auto nodes = workloads::lower_ops(*ops, spec, models);
    hw::TimelineRecorder recorder(record_ctas);
    const hw::EngineResult result =
        hw::run_engine(spec, launch_mode, nodes, record_timeline ? &recorder : nullptr);
    report = make_report(spec, ops->name, launch_mode, nodes, result,
                         record_timeline ? std::optional(recorder.take()) : std::nullopt);
  } else {
    const auto& model = std::get<workloads::ModelWorkload>(workload);
    check_model_dtype(model, spec, workload_file);
    ProgressLine progress(env.progress ? &err : nullptr, "simulating steps");
    workloads::SimulateOptions options;
    options.record_timeline = record_timeline;
    options.record_ctas = record_ctas;
    options.on_step = [&progress](std::size_t done, std::size_t total) { progress.update(done, total); };
    report = make_model_report(spec, model, launch_mode,
                               workloads::simulate_model(model, spec, launch_mode, models, options));
    report.description = workloads::describe_workload(workload);
  }

  // Everything is computed before anything is written.
  if (vm.count("out")) {
    const std::filesystem::path dir = vm["out"].as<std::string>();
    std::filesystem::create_directories(dir);
    write_file(dir / "summary.txt", render(report, [top](const RunReport& r, std::ostream& s) { write_table(r, s, top); }));
    write_file(dir / "result.json", render(report, write_json));
    write_file(dir / "kernels.csv", render(report, write_csv));
    write_file(dir / "trace.json", render(report, write_chrome_trace));
  }
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
