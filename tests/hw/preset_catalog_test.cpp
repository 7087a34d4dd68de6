// The preset catalog reuses what it parsed while a file's text is unchanged: a catalog made after
// an edit (even one that keeps the file's size) lists what a fresh parse of the folder lists.
#include "hw/preset_catalog.h"

#include <gtest/gtest.h>

#include "sim/error.h"
#include "tests/support/temp_files.h"

namespace gpusim::hw {
namespace {

using gpusim::testing::TempDir;

std::string preset(const std::string& alias, const std::string& description) {
  return "name: x\ndescription: " + description + "\naliases: [" + alias + "]\nsm_count: 4\n";
}

TEST(PresetCatalog, SeesEveryEditOfItsFiles) {
  TempDir dir;
  dir.write("chip-a.yaml", preset("aa", "first"));
  dir.write("chip-b.yaml", preset("bb", "second"));
  const PresetCatalog before(dir.path());
  ASSERT_EQ(before.presets().size(), 2u);
  EXPECT_EQ(before.find("aa")->name, "chip-a");
  EXPECT_EQ(before.find("BB")->description, "second");

  dir.write("chip-a.yaml", preset("cc", "first"));  // the same size, another alias
  dir.write("chip-c.yaml", preset("dd", "third"));
  const PresetCatalog after(dir.path());
  EXPECT_EQ(after.find("aa"), nullptr);
  EXPECT_EQ(after.find("cc")->name, "chip-a");
  EXPECT_EQ(after.find("dd")->description, "third");
  EXPECT_EQ(after.presets().size(), 3u);

  const PresetCatalog again(dir.path());  // from what was parsed: the same catalog
  ASSERT_EQ(again.presets().size(), after.presets().size());
  for (std::size_t i = 0; i < again.presets().size(); ++i) {
    EXPECT_EQ(again.presets()[i].name, after.presets()[i].name);
    EXPECT_EQ(again.presets()[i].aliases, after.presets()[i].aliases);
    EXPECT_EQ(again.presets()[i].description, after.presets()[i].description);
    EXPECT_EQ(again.presets()[i].file, after.presets()[i].file);
  }
}

TEST(PresetCatalog, AFileBrokenAfterItWasReadIsStillAnError) {
  TempDir dir;
  dir.write("chip-a.yaml", preset("aa", "first"));
  const PresetCatalog ok(dir.path());
  dir.write("chip-a.yaml", "name: x\naliases: aa\n");
  try {
    const PresetCatalog broken(dir.path());
    FAIL() << "a preset whose aliases are not a list was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "aliases");
    EXPECT_EQ(e.line(), 2);
  }
}

}  // namespace
}  // namespace gpusim::hw
