// Typed errors. Library code throws these; only main() turns them into messages and exit codes.
#pragma once

#include <stdexcept>
#include <string>

namespace gpusim {

// Bad input: a configuration, workload or command-line value. Exit status 2.
// The message names where the value came from (file and line, or the command line)
// and the full key path, e.g. "configs/hw/x.yaml:12: l2.size: expected a size such as 50MiB".
class ConfigError : public std::runtime_error {
 public:
  // line 0 means "no line" (the command line, or a file as a whole).
  ConfigError(std::string file, int line, std::string key, std::string detail);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& key() const { return key_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string file_;
  int line_;
  std::string key_;
  std::string detail_;
};

// A model cannot handle a valid input (e.g. a shape a kernel model does not support). Exit 1.
class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gpusim
