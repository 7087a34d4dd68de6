// `gpusim hw fit-host SWEEP.json --hw NAME|FILE`: fits the host section of a hardware file to a
// host characterization measured on the user's machine (validation/measure/host_walls.py) and
// prints a hardware file that inherits the chip and carries the fitted host.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "sim/error.h"
#include "src/commands.h"
#include "src/options.h"
#include "validation/case_json.h"
#include "validation/host_fit.h"

namespace gpusim::cli {

int hw_fit_host(const Args& args, const Environment& env, std::ostream& out) {
  po::options_description options("hw fit-host options");
  std::string hw_name, out_file;
  options.add_options()("help,h", "this text")(
      "sweep", po::value<std::string>(), "host_walls.py's JSON file (also the positional argument)")(
      "hw", po::value(&hw_name), "the chip: preset name or YAML file (required)")(
      "out", po::value(&out_file), "write the hardware file here instead of printing it");
  po::positional_options_description positional;
  positional.add("sweep", 1);
  const auto vm = parse_options(args, options, positional);
  if (vm.count("help")) {
    print_help(out, "gpusim hw fit-host SWEEP.json --hw NAME|FILE [--out FILE.yaml]",
               "Fits host.model_kernel_issue and host.forward_fixed to the layer sweep of a host\n"
               "characterization (validation/measure/host_walls.py, run on your machine) with\n"
               "gpusim's own kernel counts on the chip, and writes a hardware file based on the\n"
               "chip with that host: use it as --hw to predict eager wall times on your host.",
               options);
    return 0;
  }
  if (!vm.count("sweep")) throw ConfigError("command line", 0, "hw fit-host", "name the sweep's JSON file");
  if (hw_name.empty()) throw ConfigError("command line", 0, "--hw", "required: a preset or YAML file");
  const std::filesystem::path sweep = vm["sweep"].as<std::string>();
  const hw::PresetCatalog catalog = hardware_catalog(env);
  const hw::HardwareSpec spec = hw::load_hardware(hw_name, catalog, {});
  const nlohmann::json doc = validation::read_json_file(sweep);
  const auto fit = validation::fit_host(validation::read_host_sweep(doc, sweep), spec, models::default_kernel_models());

  std::string where = sweep.filename().string();
  if (doc.contains("provenance") && doc.at("provenance").is_object()) {
    const auto& p = doc.at("provenance");
    where += fmt::format(" ({}, {}, host CPU {})", p.value("device_name", "?"), p.value("date_utc", "?"),
                         p.value("cpu_model", "?"));
  }
  const bool preset = catalog.find(hw_name) != nullptr && hw_name.find('/') == std::string::npos;
  const std::string base = preset ? hw_name : std::filesystem::absolute(hw_name).string();
  std::string text = fmt::format(
      "# Fitted by gpusim hw fit-host from {}: {} forwards, host time {:.1f}% MAPE about the fitted line.\n"
      "base: {}\n"
      "description: \"{} with the host measured in {}\"\n"
      "host:\n"
      "  model_kernel_issue: {:.1f}us  # host time per kernel a Hugging Face eager forward launches\n"
      "  forward_fixed: {:.0f}us        # host time of a forward before its first launch\n",
      where, fit.samples, fit.host_mape_pct, base, spec.description, sweep.filename().string(),
      fit.model_kernel_issue_us, fit.forward_fixed_us);
  if (out_file.empty()) {
    out << text;
  } else {
    std::ofstream f(out_file);
    if (!f) throw ConfigError(out_file, 0, "--out", "cannot write this file");
    f << text;
    out << fmt::format("wrote {} (host.model_kernel_issue {:.1f} us, host.forward_fixed {:.0f} us)\n", out_file,
                       fit.model_kernel_issue_us, fit.forward_fixed_us);
  }
  return 0;
}

}  // namespace gpusim::cli
