#include "sim/input_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sim/error.h"

namespace gpusim {
namespace {

std::string kind_of(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory:
      return "a directory";
    case std::filesystem::file_type::fifo:
      return "a FIFO";
    case std::filesystem::file_type::character:
    case std::filesystem::file_type::block:
      return "a device";
    case std::filesystem::file_type::socket:
      return "a socket";
    default:
      return "an unusual file";
  }
}

}  // namespace

std::string input_file_problem(const std::filesystem::path& file) {
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);  // follows symbolic links
  if (status.type() == std::filesystem::file_type::not_found) return "no such file";
  if (ec) return "cannot read this file (" + ec.message() + ")";
  if (status.type() != std::filesystem::file_type::regular) return "not a regular file (" + kind_of(status.type()) + ")";
  // Opening a regular file cannot block; it fails for want of permission.
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::string("cannot read this file (") + std::strerror(errno) + ")";
  return "";
}

void check_input_file(const std::filesystem::path& file) {
  if (const std::string problem = input_file_problem(file); !problem.empty()) {
    throw ConfigError(file.string(), 0, "", problem);
  }
}

std::string read_input_file(const std::filesystem::path& file) {
  check_input_file(file);
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(file.string(), 0, "", "cannot read this file (a read failed)");
  return text.str();
}

}  // namespace gpusim
