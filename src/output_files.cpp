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

void check_out_folder(const std::filesystem::path& dir) {
  if (std::filesystem::exists(dir) && !std::filesystem::is_directory(dir)) {
    throw ConfigError("command line", 0, "--out", "'" + dir.string() + "' is not a folder");
  }
}

}  // namespace gpusim::cli
