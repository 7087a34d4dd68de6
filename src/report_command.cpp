// `gpusim report WORKLOAD.yaml --hw NAME|FILE`: a profiling paper in the shape of seed 000,
// filled by simulation. Reads and validates the inputs as `gpusim run` does, simulates the
// workload as given and (model workloads) a batch x sequence grid of prefill steps and a decode
// step per batch, then writes DIR/report.md, DIR/kernels.csv and DIR/roofline.png. Everything is
// computed before the first file is written.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "src/commands.h"
#include "src/markdown_report.h"
#include "src/options.h"
#include "src/output_files.h"
#include "src/progress.h"
#include "src/report_grid.h"
#include "src/report_writers.h"
#include "src/roofline_plot.h"
#include "src/run_report.h"
#include "src/run_bands.h"
#include "src/simulate_workload.h"
#include "workloads/model_run.h"
#include "workloads/parameter_count.h"
#include "workloads/plan_summary.h"
#include "workloads/workload.h"

namespace gpusim::cli {
namespace {

// Seed 000's grid.
const std::vector<std::int64_t> kDefaultBatches{1, 8, 32, 128};
const std::vector<std::int64_t> kDefaultSeqLens{256, 1024, 4096, 8192};
const std::vector<std::int64_t> kDefaultTrainSeqLens{128, 256, 512, 1024};  // seed 002's grid
constexpr std::int64_t kDecodeSeqLenForPrefill = 1024;  // a prefill workload names no KV length

// "1,8,32" → sorted distinct values in [1, max]; anything else is bad input naming the option.
std::vector<std::int64_t> parse_list(const std::string& text, const std::string& option,
                                     std::int64_t max) {
  std::vector<std::int64_t> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    std::int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < 1 || v > max) {
      throw ConfigError(
          "command line", 0, option,
          fmt::format("'{}' is not a list of whole numbers from 1 to {} separated by commas", text,
                      max));
    }
    values.push_back(v);
  }
  if (values.empty()) throw ConfigError("command line", 0, option, "needs at least one value");
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// A folder name from workload and hardware names: only characters safe in any shell or OS.
std::string folder_name(const std::string& workload, const std::string& hw) {
  std::string out = "report-" + workload + "-" + hw;
  for (char& c : out) {
    const bool safe =
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    if (!safe) c = '_';
  }
  return out;
}

// Quotes a word for the shell only when it needs it, so command lines read naturally.
std::string shell_word(const std::string& w) {
  const bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("_-./=:,+@%").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (plain) return w;
  std::string out = "'";
  for (const char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string command_line(const std::vector<std::string>& words) {
  std::string out = "gpusim";
  for (const auto& w : words) out += " " + shell_word(w);
  return out;
}

struct Inputs {
  std::string workload_file, hw_arg, mode;
  std::vector<std::string> sets;
  std::optional<std::string> batches, seq_lens, models, out;
};

// --models a,b,c: model presets, the rows of a training grid.
std::vector<std::string> parse_names(const std::string& text) {
  std::vector<std::string> names;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string name = text.substr(from, comma - from);
    if (name.empty()) throw ConfigError("command line", 0, "--models", "empty model name in '" + text + "'");
    names.push_back(name);
    from = comma + 1;
  }
  return names;
}

// The reproduction block: the report itself, the run behind section 2.4, and one grid cell of
// each table (other cells change batch and seq_len).
std::vector<std::string> reproduction_commands(const Inputs& in, const ReportData& d) {
  std::vector<std::string> common{in.workload_file, "--hw", in.hw_arg};
  for (const auto& s : in.sets) {
    common.push_back("--set");
    common.push_back(s);
  }
  if (in.mode != "graph") {
    common.push_back("--mode");
    common.push_back(in.mode);
  }
  std::vector<std::string> report{"report"};
  report.insert(report.end(), common.begin(), common.end());
  if (in.batches) report.insert(report.end(), {"--batches", *in.batches});
  if (in.seq_lens) report.insert(report.end(), {"--seq-lens", *in.seq_lens});
  if (in.models) report.insert(report.end(), {"--models", *in.models});
  if (in.out) report.insert(report.end(), {"--out", *in.out});
  std::vector<std::string> run{"run"};
  run.insert(run.end(), common.begin(), common.end());
  std::vector<std::string> lines{
      "# this report", command_line(report),
      "# section 2.4: the workload as given (add --out DIR for CSV, JSON and a trace)",
      command_line(run)};
  if (!d.model) return lines;
  const auto& g = d.model->grid;
  if (d.model->workload.phase == workloads::Phase::kGenerate) {
    lines.push_back(
        "# sections 2.1-2.3: one cell each is a copy of the workload file with phase prefill or "
        "decode,");
    lines.push_back("# batch and seq_len set and output_len removed, run as above");
    return lines;
  }
  if (g.training) {
    std::vector<std::string> words = run;
    if (!g.models.empty()) words.insert(words.end(), {"--set", "workload.model=" + g.models.front()});
    words.insert(words.end(), {"--set", fmt::format("workload.batch={}", g.batches.front()), "--set",
                               fmt::format("workload.seq_len={}", g.seq_lens.front())});
    lines.push_back(fmt::format("# sections 2.1-2.3: the cell of {} at {} tokens (the others alike)",
                                g.models.empty() ? fmt::format("batch {}", g.batches.front()) : g.models.front(),
                                g.seq_lens.front()));
    lines.push_back(command_line(words));
    return lines;
  }
  const auto cell = [&](const char* phase, std::int64_t batch, std::int64_t seq_len) {
    std::vector<std::string> words = run;
    words.insert(words.end(), {"--set", std::string("workload.phase=") + phase, "--set",
                               fmt::format("workload.batch={}", batch), "--set",
                               fmt::format("workload.seq_len={}", seq_len)});
    return command_line(words);
  };
  lines.push_back(
      fmt::format("# sections 2.1-2.2: the prefill cell at batch {}, {} tokens (the others alike)",
                  g.batches.front(), g.seq_lens.front()));
  lines.push_back(cell("prefill", g.batches.front(), g.seq_lens.front()));
  lines.push_back(fmt::format("# section 2.3: the decode step at batch {} (the others alike)",
                              g.batches.front()));
  lines.push_back(cell("decode", g.batches.front(), g.decode_seq_len));
  return lines;
}

}  // namespace

int report_command(const Args& args, const Environment& env, std::ostream& out, std::ostream& err) {
  po::options_description options("report options");
  std::string hw_name, mode = "graph";
  std::vector<std::string> sets;
  options.add_options()("help,h", "this text")("workload", po::value<std::string>(),
                                               "workload YAML file (the positional argument)")(
      "hw", po::value(&hw_name), "hardware preset name or YAML file (required)")(
      "set", po::value(&sets)->composing(),
      "override one field: --set hw.l2.size=128MiB, --set workload.dtype=fp16")(
      "mode", po::value(&mode)->default_value("graph"), "graph (CUDA-graph replay) | eager")(
      "out", po::value<std::string>(),
      "folder to write report.md, kernels.csv and roofline.png into (default: report-WORKLOAD-HW)")(
      "batches", po::value<std::string>(),
      "batch sizes of the memory, TTFT and decode tables (default 1,8,32,128)")(
      "seq-lens", po::value<std::string>(),
      "sequence lengths of the memory and TTFT tables (default 256,1024,4096,8192; training: "
      "128,256,512,1024)")(
      "models", po::value<std::string>(),
      "training workloads: model presets as the grid's rows, each at the workload's batch (seed 002's "
      "model x sequence table), e.g. cs336-small,cs336-medium")(
      "no-cache", "simulate every kernel from scratch (to check the caches: the same report, slower)");
  po::positional_options_description positional;
  positional.add("workload", 1);
  const auto vm = parse_options(args, options, positional);
  if (vm.count("help")) {
    print_help(
        out,
        "gpusim report WORKLOAD.yaml --hw NAME|FILE [--out DIR] [--set KEY=VALUE]...\n"
        "           [--mode graph|eager] [--batches LIST] [--seq-lens LIST] [--no-cache]",
        "Writes a simulated profiling report (Markdown, seed 000's structure): hardware, peak "
        "memory,\n"
        "time to first token and decode throughput over batch sizes and sequence lengths, the "
        "kernel\n"
        "profile of the workload, a roofline plot (python3 + matplotlib) and the bottlenecks.",
        options);
    return 0;
  }
  if (!vm.count("workload"))
    throw ConfigError("command line", 0, "WORKLOAD", "name a workload file");
  if (!vm.count("hw"))
    throw ConfigError("command line", 0, "--hw", "required: a preset or YAML file");
  if (mode != "graph" && mode != "eager") {
    throw ConfigError("command line", 0, "--mode", "'" + mode + "' is not one of: graph, eager");
  }
  Inputs in;
  in.workload_file = vm["workload"].as<std::string>();
  in.hw_arg = hw_name;
  in.mode = mode;
  in.sets = sets;
  if (vm.count("batches")) in.batches = vm["batches"].as<std::string>();
  if (vm.count("seq-lens")) in.seq_lens = vm["seq-lens"].as<std::string>();
  if (vm.count("models")) in.models = vm["models"].as<std::string>();
  if (vm.count("out")) in.out = vm["out"].as<std::string>();
  if (in.models && in.batches) {
    throw ConfigError("command line", 0, "--batches",
                      "a grid by --models uses the workload's batch (set it with --set workload.batch=N)");
  }

  const auto overrides = parse_overrides(sets);
  const hw::PresetCatalog catalog = hardware_catalog(env);
  const hw::HardwareSpec spec = hw::load_hardware(hw_name, catalog, hardware_overrides(overrides));
  const workloads::Workload workload = workloads::load_workload(
      in.workload_file, workload_overrides(overrides), env.config_dir / "models");
  const auto* as_model = std::get_if<workloads::ModelWorkload>(&workload);
  const bool training = as_model && as_model->phase == workloads::Phase::kTrain;
  if (in.models && !training) {
    throw ConfigError("command line", 0, "--models", "is for training workloads (phase: train)");
  }
  const auto batches = in.batches ? parse_list(*in.batches, "--batches", std::int64_t{1} << 20)
                       : training ? std::vector<std::int64_t>{as_model->batch}
                                  : kDefaultBatches;
  const auto seq_lens = in.seq_lens ? parse_list(*in.seq_lens, "--seq-lens", std::int64_t{1} << 24)
                        : training  ? kDefaultTrainSeqLens
                                    : kDefaultSeqLens;
  // Each row's workload is the file read again with its model set, so each is checked as a file
  // naming that model would be.
  std::vector<workloads::ModelWorkload> model_rows;
  if (in.models) {
    for (const auto& name : parse_names(*in.models)) {
      auto row_overrides = workload_overrides(overrides);
      row_overrides.push_back({"model", name});
      model_rows.push_back(std::get<workloads::ModelWorkload>(
          workloads::load_workload(in.workload_file, row_overrides, env.config_dir / "models")));
    }
  }

  ReportData data;
  data.hw = spec;
  data.mode = mode;
  data.workload_text = workloads::describe_workload(workload);
  const std::filesystem::path dir =
      in.out ? std::filesystem::path(*in.out)
             : std::filesystem::path(folder_name(
                   std::visit([](const auto& w) { return w.name; }, workload), spec.name));
  check_out_folder(dir);

  // The workload as given, simulated as `gpusim run` does.
  const auto launch_mode = mode == "eager" ? hw::LaunchMode::kEager : hw::LaunchMode::kGraph;
  const auto models = models::default_kernel_models();
  RunReport report;
  {
    ProgressLine progress(env.progress ? &err : nullptr, "simulating the workload");
    workloads::SimulateOptions sim;
    sim.reuse = vm.count("no-cache") == 0;
    sim.on_step = [&progress](std::size_t done, std::size_t total) {
      progress.update(done, total);
    };
    report = simulate_workload(spec, workload, in.workload_file, launch_mode, models, sim);
  }
  attach_shipped_bands(report, spec.name, env.config_dir, err);
  if (const auto* ops = std::get_if<workloads::OpWorkload>(&workload)) {
    data.workload_name = ops->name;
    data.dtype = ops->default_dtype
                     ? *ops->default_dtype
                     : (ops->ops.empty() ? hw::DType::kBf16 : ops->ops.front().op.dtype());
  } else {
    const auto& model = std::get<workloads::ModelWorkload>(workload);
    data.workload_name = model.name;
    data.dtype = model.dtype;
    ModelSection section;
    section.workload = model;
    section.parameters = workloads::parameter_count(model.model);
    GridOptions grid;
    grid.batches = batches;
    grid.seq_lens = seq_lens;
    grid.model_rows = std::move(model_rows);
    grid.decode_seq_len =
        model.phase == workloads::Phase::kPrefill ? kDecodeSeqLenForPrefill : model.seq_len;
    grid.mode = launch_mode;
    grid.reuse = vm.count("no-cache") == 0;
    ProgressLine progress(env.progress ? &err : nullptr, "simulating the report grid");
    grid.on_cell = [&progress](std::size_t done, std::size_t total) {
      progress.update(done, total);
    };
    section.grid = run_report_grid(model, spec, models, grid);
    data.model = std::move(section);
  }
  data.run = profile_step(report);
  data.run_scope = report.kernels_scope;
  data.roofline.dram_bytes_per_s = spec.dram.achievable_bandwidth();
  data.roofline.tensor_flops_per_s = spec.peak_tensor_flops(data.dtype);
  data.roofline.fp32_flops_per_s = spec.peak_fp32_flops();
  data.commands = reproduction_commands(in, data);
  std::ostringstream csv;
  write_csv(report, csv);

  // Everything is computed; now the files. The image goes first: the text says whether it exists.
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw ConfigError("command line", 0, "--out",
                      "cannot create '" + dir.string() + "': " + ec.message());
  write_file(dir / "kernels.csv", csv.str());
  RooflineRequest plot;
  plot.config_dir = env.config_dir;
  plot.csv = dir / "kernels.csv";
  plot.png = dir / "roofline.png";
  plot.dram_bytes_per_s = data.roofline.dram_bytes_per_s;
  plot.tensor_flops_per_s = data.roofline.tensor_flops_per_s;
  plot.tensor_label = std::string(hw::name(data.dtype)) + " tensor";
  plot.fp32_flops_per_s = data.roofline.fp32_flops_per_s;
  plot.title = fmt::format("Roofline: {} on {} ({}, {} mode)", data.workload_name, spec.name,
                           hw::name(data.dtype), mode);
  const PlotResult drawn = draw_roofline(plot);
  data.roofline.drawn = drawn.drawn;
  data.roofline.missing_reason = drawn.reason;
  if (!drawn.drawn) {
    // A stale image from an earlier report would contradict the text.
    std::filesystem::remove(plot.png, ec);
    err << "gpusim: warning: no roofline image: " << drawn.reason << "\n";
    if (!drawn.output.empty()) err << drawn.output;
  }
  write_file(dir / "report.md", render_markdown(data));
  out << "wrote " << (dir / "report.md").string() << ", " << (dir / "kernels.csv").string();
  if (drawn.drawn) out << ", " << plot.png.string();
  out << "\n";
  return 0;
}

}  // namespace gpusim::cli
