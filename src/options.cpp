#include "src/options.h"

#include <ostream>

#include "sim/error.h"

namespace gpusim::cli {

po::variables_map parse_options(const std::vector<std::string>& args,
                                const po::options_description& options,
                                const po::positional_options_description& positional) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error_with_option_name& e) {
    throw ConfigError("command line", 0, e.get_option_name(), e.what());
  } catch (const po::error& e) {
    throw ConfigError("command line", 0, "", e.what());
  }
  return vm;
}

std::vector<Override> parse_overrides(const std::vector<std::string>& sets) {
  std::vector<Override> out;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    const std::string key = s.substr(0, eq);
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("command line", 0, "--set " + s, "expected KEY=VALUE, e.g. hw.l2.size=128MiB");
    }
    const auto dot = key.find('.');
    const std::string target = key.substr(0, dot);
    if (dot == std::string::npos || (target != "hw" && target != "workload")) {
      throw ConfigError("command line", 0, "--set " + s,
                        "the key must start with hw. or workload. (e.g. hw.sm_count=80)");
    }
    out.push_back({target, key.substr(dot + 1), s.substr(eq + 1)});
  }
  return out;
}

std::vector<hw::HardwareOverride> hardware_overrides(const std::vector<Override>& overrides) {
  std::vector<hw::HardwareOverride> out;
  for (const auto& o : overrides) {
    if (o.target == "hw") out.push_back({o.key, o.value});
  }
  return out;
}

std::vector<workloads::WorkloadOverride> workload_overrides(const std::vector<Override>& overrides) {
  std::vector<workloads::WorkloadOverride> out;
  for (const auto& o : overrides) {
    if (o.target == "workload") out.push_back({o.key, o.value});
  }
  return out;
}

void print_help(std::ostream& out, const std::string& usage, const std::string& summary,
                const po::options_description& options) {
  out << "Usage: " << usage << "\n\n" << summary << "\n\n" << options << "\n";
}

}  // namespace gpusim::cli
