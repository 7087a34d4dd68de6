// Small helpers shared by the commands: parsing with Boost.Program_options into ConfigErrors,
// and splitting `--set` overrides by target.
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "workloads/overrides.h"

namespace gpusim::cli {

namespace po = boost::program_options;

// Parses `args` against `options` (and positional names); Program_options errors become
// ConfigErrors naming the command line and the option.
po::variables_map parse_options(const std::vector<std::string>& args,
                                const po::options_description& options,
                                const po::positional_options_description& positional = {});

// A `--set KEY=VALUE`, split at the first '='. KEY starts with "hw." or "workload.".
struct Override {
  std::string target;  // "hw" or "workload"
  std::string key;     // without the target prefix
  std::string value;
};
std::vector<Override> parse_overrides(const std::vector<std::string>& sets);
std::vector<hw::HardwareOverride> hardware_overrides(const std::vector<Override>& overrides);
std::vector<workloads::WorkloadOverride> workload_overrides(const std::vector<Override>& overrides);

// Prints "Usage: <usage>" and the options.
void print_help(std::ostream& out, const std::string& usage, const std::string& summary,
                const po::options_description& options);

}  // namespace gpusim::cli
