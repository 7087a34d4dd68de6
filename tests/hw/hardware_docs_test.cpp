// docs/hardware.md documents every key the schema accepts (it embeds `gpusim hw keys`).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "hw/hardware_schema.h"
#include "tests/support/temp_files.h"

namespace gpusim::hw {
namespace {

TEST(HardwareDocs, ListEveryKey) {
  std::ifstream in(gpusim::testing::repo_dir() / "docs" / "hardware.md");
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& f : hardware_fields()) {
    EXPECT_NE(text.str().find("\n" + std::string(f.path) + " "), std::string::npos)
        << f.path << " is missing from docs/hardware.md; paste `gpusim hw keys` there";
  }
}

}  // namespace
}  // namespace gpusim::hw
