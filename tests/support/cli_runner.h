// Test helper: runs the gpusim command line in-process against the shipped configs.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
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

// `gpusim run WORKLOAD --hw HW --format json [extra...]`, expected to succeed; its JSON (null
// when it failed, after recording the failure).
inline nlohmann::json run_json(const std::string& workload, const std::string& hw,
                               std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"run", workload, "--hw", hw, "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliResult r = run_gpusim(args);
  EXPECT_EQ(r.status, 0) << r.err;
  return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
}

}  // namespace gpusim::testing
