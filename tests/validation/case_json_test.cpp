// validation::read_json_file reads the measurement files plain or gzip'd (validation/data keeps
// its large files gzip'd).
#include "validation/case_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "sim/error.h"
#include "tests/support/gzip.h"
#include "tests/support/temp_files.h"

namespace gpusim::validation {
namespace {

using gpusim::testing::gzipped;
using gpusim::testing::repo_dir;
using gpusim::testing::TempDir;

TEST(ReadJsonFile, PlainAndGzipFilesReadTheSame) {
  TempDir dir;
  nlohmann::json doc;
  doc["cases"] = nlohmann::json::array();
  for (int i = 0; i < 200; ++i) doc["cases"].push_back({{"id", "case_" + std::to_string(i)}, {"us", 10.5 * i}});
  const std::string text = doc.dump(1);
  EXPECT_EQ(read_json_file(dir.write("plain.json", text)), doc);
  EXPECT_EQ(read_json_file(dir.write("one.json.gz", gzipped(text))), doc);
  EXPECT_EQ(read_json_file(dir.write("two.json.gz", gzipped(text, true))), doc);
}

TEST(ReadJsonFile, BrokenFilesAreClearErrors) {
  TempDir dir;
  const std::string gz = gzipped(R"({"cases": [1, 2, 3]})");
  const auto expect_error = [](const std::filesystem::path& file, const std::string& why) {
    try {
      read_json_file(file);
      ADD_FAILURE() << "no error for " << file;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(file.filename().string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  expect_error(dir.write("cut.json.gz", gz.substr(0, gz.size() - 9)), "corrupt gzip data");
  expect_error(dir.write("not_json.json.gz", gzipped("{\"cases\": [1, 2")), "not valid JSON");
  expect_error(dir.write("not_json.json", "cases: 1"), "not valid JSON");
  expect_error(dir.path() / "missing.json.gz", "no such file");
}

// The stored files read through it: a gzip'd measurement file of validation/data.
TEST(ReadJsonFile, StoredGzipFilesRead) {
  const auto doc = read_json_file(repo_dir() / "validation" / "data" / "hf_models_h100.json.gz");
  ASSERT_TRUE(doc.contains("cases"));
  EXPECT_GT(doc.at("cases").size(), 10u);
}

}  // namespace
}  // namespace gpusim::validation
