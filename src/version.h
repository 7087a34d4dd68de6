// What `gpusim --version` prints: the release and the commit it was built from.
#pragma once

#include <string>

namespace gpusim::cli {

// "gpusim 0.1.0 (commit 1a2b3c4)", "(commit 1a2b3c4-dirty)" for a tree with uncommitted
// changes at build time, "(commit unknown)" for one built outside git.
std::string version_text();

}  // namespace gpusim::cli
