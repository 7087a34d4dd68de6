// Parses kept across calls (sim/parsed_file_cache.h) are exact: a file is re-read every time and
// its parse reused only while the text is the same to the byte, so a hardware file loaded after
// an edit (of itself or of its base, even one that keeps the size) is what a fresh parse gives.
#include "sim/parsed_file_cache.h"

#include <gtest/gtest.h>

#include "hw/hardware_loader.h"
#include "sim/error.h"
#include "tests/support/temp_files.h"

namespace gpusim {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::TempDir;

TEST(ParsedFileCache, ReparsesOnlyWhenTheTextChanges) {
  TempDir dir;
  const auto file = dir.write("n.txt", "12");
  ParsedFileCache<int> cache;
  int parses = 0;
  const auto parse = [&parses](const std::string& text) {
    ++parses;
    return std::stoi(text);
  };
  EXPECT_EQ(*cache.get(file, parse), 12);
  EXPECT_EQ(*cache.get(file, parse), 12);
  EXPECT_EQ(parses, 1);
  dir.write("n.txt", "34");  // same size
  EXPECT_EQ(*cache.get(file, parse), 34);
  EXPECT_EQ(parses, 2);
  // A parse that throws keeps nothing: the error comes again, and so does the next good text.
  dir.write("n.txt", "xx");
  EXPECT_THROW(cache.get(file, parse), std::invalid_argument);
  EXPECT_THROW(cache.get(file, parse), std::invalid_argument);
  dir.write("n.txt", "34");
  EXPECT_EQ(*cache.get(file, parse), 34);
  std::filesystem::remove(file);
  EXPECT_THROW(cache.get(file, parse), ConfigError);  // a missing file is never served from memory
}

TEST(ParsedFileCache, HardwareFilesAndTheirBasesAreReadAgainAfterAnEdit) {
  TempDir dir;
  const hw::PresetCatalog catalog(config_dir() / "hw");
  dir.write("base.yaml", "base: h100\nname: mybase\nsm_count: 100  # first\n");
  const auto top = dir.write("top.yaml", "base: ./base.yaml\nname: top\nl2:\n  size: 64MiB\n");
  const hw::HardwareSpec first = hw::load_hardware(top.string(), catalog);
  EXPECT_EQ(first.sm_count, 100);
  EXPECT_EQ(first.origins.at("sm_count").line, 3);
  EXPECT_EQ(first.origins.at("sm_count").source, "first");

  dir.write("base.yaml", "base: h100\nname: mybase\nsm_count: 110  # other\n");  // same size
  const hw::HardwareSpec second = hw::load_hardware(top.string(), catalog);
  EXPECT_EQ(second.sm_count, 110);
  EXPECT_EQ(second.origins.at("sm_count").source, "other");

  dir.write("top.yaml", "base: ./base.yaml\nname: top\nl2:\n  size: 32MiB\n");
  EXPECT_EQ(hw::load_hardware(top.string(), catalog).l2.size, std::int64_t{32} << 20);
  dir.write("top.yaml", "base: ./base.yaml\nname: top\nl2:\n  sise: 32MiB\n");
  try {
    hw::load_hardware(top.string(), catalog);
    FAIL() << "a misspelled key after an edit was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 4);
    EXPECT_EQ(e.key(), "l2.sise");
  }
}

}  // namespace
}  // namespace gpusim
