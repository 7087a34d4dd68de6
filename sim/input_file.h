// Files a user names (workloads, hardware files, model configs, studies, request files, traces):
// one check before reading, so that a directory, a FIFO or a device is refused by name instead
// of read (a FIFO would block, /dev/zero never ends) or reported as missing.
#pragma once

#include <filesystem>
#include <string>

namespace gpusim {

// Why `file` cannot be read as an input: "no such file", "not a regular file (a directory)"
// (or a FIFO, a device, a socket), "cannot read this file (permission denied)"; "" when it can.
std::string input_file_problem(const std::filesystem::path& file);

// Throws ConfigError(file, 0, "", problem) when input_file_problem finds one.
void check_input_file(const std::filesystem::path& file);

// The whole of `file`, after check_input_file.
std::string read_input_file(const std::filesystem::path& file);

}  // namespace gpusim
