// `gpusim sweep STUDY.yaml [--out DIR] [--threads N]`: runs every point of a design study in
// parallel, resumable, into DIR/results.csv, and plots the study's chosen metric.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <ostream>
#include <sstream>

#include "sim/error.h"
#include "src/commands.h"
#include "src/csv_line.h"
#include "src/options.h"
#include "src/output_files.h"
#include "src/study_plot.h"
#include "src/study.h"
#include "src/sweep_runner.h"

namespace gpusim::cli {
namespace {

// The results as an aligned table (the CSV's cells; long cells shortened).
void print_results(const std::filesystem::path& csv, std::ostream& out) {
  std::ifstream in(csv);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells = split_csv_line(line).value_or(std::vector<std::string>{line});
    for (auto& c : cells) {
      if (c.size() > 40) c = c.substr(0, 37) + "...";
    }
    rows.push_back(std::move(cells));
  }
  if (rows.empty()) return;
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i) {
      line += fmt::format("{:<{}}", r[i], width[i] + 2);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

}  // namespace

int sweep_command(const Args& args, const Environment& env, std::ostream& out, std::ostream& err) {
  po::options_description options("sweep options");
  int threads = 0;
  options.add_options()("help,h", "this text")(
      "study", po::value<std::string>(), "study YAML file (the positional argument)")(
      "out", po::value<std::string>(), "results folder (default: sweep-<study name>); an interrupted "
                                       "sweep resumes from it")(
      "threads", po::value(&threads)->default_value(0), "simulations at once (0: all cores)")(
      "no-cache", "simulate every kernel of every point from scratch (to check the caches: the "
                  "same results, slower)");
  po::positional_options_description positional;
  positional.add("study", 1);
  const auto vm = parse_options(args, options, positional);
  if (vm.count("help")) {
    print_help(out, "gpusim sweep STUDY.yaml [--out DIR] [--threads N] [--no-cache]",
               "Runs every point of a design study (configs/studies/) and writes DIR/results.csv\n"
               "(one row per point) and, when the study names a plot, DIR/plot.png.",
               options);
    return 0;
  }
  if (!vm.count("study")) throw ConfigError("command line", 0, "STUDY", "name a study file");
  if (threads < 0) throw ConfigError("command line", 0, "--threads", "must be 0 (all cores) or more");
  const Study study = load_study(vm["study"].as<std::string>());
  const std::filesystem::path dir = vm.count("out") ? vm["out"].as<std::string>() : "sweep-" + study.name;
  check_out_folder(dir);
  SweepOptions o;
  o.out_dir = dir;
  o.threads = threads;
  o.reuse = vm.count("no-cache") == 0;
  o.progress = env.progress ? &err : nullptr;
  const SweepSummary s = run_sweep(study, env, o);
  if (!s.root) return 0;  // rank 0 of an MPI job reports for all
  out << fmt::format("study {}: {} points ({} simulated, {} from an earlier run) -> {}\n\n", study.name,
                     s.points, s.simulated, s.reused, s.csv.string());
  print_results(s.csv, out);
  if (study.plot) {
    const PlotResult plot = draw_study_plot(study, s.csv, dir / "plot.png", env);
    out << "\n" << (plot.drawn ? "plot: " + (dir / "plot.png").string() : "no plot: " + plot.reason) << "\n";
    if (!plot.drawn && !plot.output.empty()) err << plot.output;
  }
  return 0;
}

}  // namespace gpusim::cli
