// Writing result files so that a failure never leaves one half-written (DESIGN.md: "Nothing is
// written half-way on failure"). Shared by the commands that write folders of results.
#pragma once

#include <filesystem>
#include <string>

namespace gpusim::cli {

// Writes `text` to `path` through a temporary file renamed into place; a ConfigError naming
// the path when it cannot be written.
void write_file(const std::filesystem::path& path, const std::string& text);

// An --out folder must be a folder or not exist yet; otherwise a ConfigError on the command line.
void check_out_folder(const std::filesystem::path& dir);

}  // namespace gpusim::cli
