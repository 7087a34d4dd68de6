// One function per `gpusim` command; each parses its own options (Boost.Program_options)
// and throws ConfigError for bad input. Dispatch and error handling live in cli.cpp.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "src/cli.h"

namespace gpusim::cli {

using Args = std::vector<std::string>;

int hw_command(const Args& args, const Environment& env, std::ostream& out);
// `gpusim hw fit-host` (src/fit_host_command.cpp).
int hw_fit_host(const Args& args, const Environment& env, std::ostream& out);
int occupancy_command(const Args& args, const Environment& env, std::ostream& out);
int run_command(const Args& args, const Environment& env, std::ostream& out, std::ostream& err);
int report_command(const Args& args, const Environment& env, std::ostream& out, std::ostream& err);
int sweep_command(const Args& args, const Environment& env, std::ostream& out, std::ostream& err);
int replay_command(const Args& args, const Environment& env, std::ostream& out, std::ostream& err);
int serve_command(const Args& args, const Environment& env, std::ostream& out, std::ostream& err);
int validate_command(const Args& args, const Environment& env, std::ostream& out);

}  // namespace gpusim::cli
