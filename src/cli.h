// The gpusim command line, as a function so tests can run it in-process.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "hw/preset_catalog.h"

namespace gpusim::cli {

// Where the shipped configuration lives (configs/hw, configs/models, configs/workloads).
struct Environment {
  std::filesystem::path config_dir;
  bool progress = false;  // draw progress lines on `err` (main: when stderr is a terminal)
};

// The hardware presets `--hw` names: chips (configs/hw) and systems of several (configs/systems).
inline hw::PresetCatalog hardware_catalog(const Environment& env) {
  return hw::PresetCatalog(std::vector{env.config_dir / "hw", env.config_dir / "systems"});
}

// Runs one command; `args` excludes the program name. Returns the exit status:
// 0 success, 2 bad input (message on `err`), 1 internal error.
int run_cli(const std::vector<std::string>& args, const Environment& env, std::ostream& out,
            std::ostream& err);

// The same without turning errors into messages: bad input throws ConfigError, a model's
// limits ModelError (the Python API raises them as Python exceptions).
int dispatch_command(const std::vector<std::string>& args, const Environment& env, std::ostream& out,
                     std::ostream& err);

}  // namespace gpusim::cli
