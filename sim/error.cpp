#include "sim/error.h"

#include <utility>

namespace gpusim {
namespace {

std::string compose(const std::string& file, int line, const std::string& key,
                    const std::string& detail) {
  std::string where = file;
  if (line > 0) where += ":" + std::to_string(line);
  if (!key.empty()) where += ": " + key;
  return where + ": " + detail;
}

}  // namespace

ConfigError::ConfigError(std::string file, int line, std::string key, std::string detail)
    : std::runtime_error(compose(file, line, key, detail)),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)),
      detail_(std::move(detail)) {}

}  // namespace gpusim
