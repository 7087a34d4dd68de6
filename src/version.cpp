#include "src/version.h"

// Written at build time (cmake/git_commit.cmake); only this file depends on it, so a new commit
// recompiles one file.
#include "gpusim_git_commit.h"

namespace gpusim::cli {

std::string version_text() { return std::string("gpusim ") + GPUSIM_VERSION + " (commit " GPUSIM_GIT_COMMIT ")"; }

}  // namespace gpusim::cli
