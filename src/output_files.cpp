#include "src/output_files.h"

#include <fstream>

#include "sim/error.h"

namespace gpusim::cli {

void write_file(const std::filesystem::path& path, const std::string& text) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw ConfigError(path.string(), 0, "", "cannot write this file");
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace gpusim::cli
