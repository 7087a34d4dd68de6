// Test helper: runs the gpusim command line in-process against the shipped configs.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "src/cli.h"
#include "tests/support/temp_files.h"

namespace gpusim::testing {

struct CliResult {
  int status;
  std::string out, err;
};

inline CliResult run_gpusim(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = cli::run_cli(args, cli::Environment{config_dir()}, out, err);
  return {status, out.str(), err.str()};
}

}  // namespace gpusim::testing
