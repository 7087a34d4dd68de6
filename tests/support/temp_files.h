// Test helper: a fresh folder per test for YAML files written on the fly.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

namespace gpusim::testing {

inline std::filesystem::path repo_dir() { return GPUSIM_REPO_DIR; }
inline std::filesystem::path config_dir() { return repo_dir() / "configs"; }

// A whole file's bytes ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string text;
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return text;
}

// A file path of this test and process alone: ctest runs tests in parallel (each in its own
// process), and the normal and sanitizer builds may run the same test at once, so a fixed name in
// the temporary folder can be truncated by one run while another reads it.
inline std::filesystem::path test_temp_path(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::filesystem::temp_directory_path() /
         (std::string("gpusim_") + info->test_suite_name() + "_" + info->name() + "_" +
          std::to_string(::getpid()) + "_" + name);
}

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    // The process id keeps two test binaries (normal and sanitizer builds) that run the same
    // test at once from sharing a folder.
    path_ = std::filesystem::temp_directory_path() /
            (std::string("gpusim_") + info->test_suite_name() + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace gpusim::testing
