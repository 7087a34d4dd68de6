// Files a user names: directories, FIFOs and devices are refused by name, never read.
#include "sim/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "sim/error.h"
#include "tests/support/temp_files.h"

namespace gpusim {
namespace {

using gpusim::testing::TempDir;

TEST(InputFile, SaysWhyAFileCannotBeRead) {
  const TempDir dir;
  const auto fifo = dir.path() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(input_file_problem(dir.path() / "missing.yaml"), "no such file");
  EXPECT_EQ(input_file_problem(dir.path()), "not a regular file (a directory)");
  EXPECT_EQ(input_file_problem(fifo), "not a regular file (a FIFO)");  // opening it would block
  EXPECT_EQ(input_file_problem("/dev/zero"), "not a regular file (a device)");  // reading it never ends
  const auto ok = dir.write("ok.yaml", "a: 1\n");
  EXPECT_EQ(input_file_problem(ok), "");
  EXPECT_EQ(read_input_file(ok), "a: 1\n");
  // Permissions do not stop root, so only others see this one.
  if (::geteuid() != 0) {
    const auto locked = dir.write("locked.yaml", "a: 1\n");
    std::filesystem::permissions(locked, std::filesystem::perms::none);
    EXPECT_EQ(input_file_problem(locked), "cannot read this file (Permission denied)");
  }
}

TEST(InputFile, ErrorsNameTheFile) {
  try {
    read_input_file("/dev/zero");
    FAIL() << "read /dev/zero";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "/dev/zero");
    EXPECT_EQ(e.detail(), "not a regular file (a device)");
  }
}

}  // namespace
}  // namespace gpusim
