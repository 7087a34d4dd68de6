// The gpusim executable: finds the shipped configuration, then hands over to run_cli.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "src/allocator_tuning.h"
#include "src/cli.h"

namespace {

// GPUSIM_CONFIG_DIR wins; then an installed tree (bin/../share/gpusim/configs);
// then the source tree this binary was built from.
std::filesystem::path find_config_dir(const char* argv0) {
  if (const char* env = std::getenv("GPUSIM_CONFIG_DIR"); env && *env) return env;
  std::error_code ec;
  const auto exe = std::filesystem::canonical("/proc/self/exe", ec);
  const auto installed = (ec ? std::filesystem::path(argv0) : exe).parent_path() / ".." /
                         "share" / "gpusim" / "configs";
  if (std::filesystem::is_directory(installed, ec)) return installed;
  return GPUSIM_SOURCE_CONFIG_DIR;
}

}  // namespace

int main(int argc, char** argv) {
  gpusim::cli::tune_allocator();
  const std::vector<std::string> args(argv + 1, argv + argc);
  const gpusim::cli::Environment env{find_config_dir(argv[0]), isatty(STDERR_FILENO) == 1};
  return gpusim::cli::run_cli(args, env, std::cout, std::cerr);
}
