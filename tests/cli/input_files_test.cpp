// Every file a user names on the command line or in a file is checked the same way: a
// directory, a FIFO or a device is "not a regular file" (exit 2, the file named), never read.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::cli {
namespace {

using gpusim::testing::CliResult;
using gpusim::testing::config_dir;
using gpusim::testing::run_gpusim;
using gpusim::testing::TempDir;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

void expect_refused(const CliResult& r, const std::string& message) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, message)) << r.err;
}

class InputFiles : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0); }
  TempDir dir;
  std::filesystem::path fifo = dir.path() / "pipe";
  std::string decode = (config_dir() / "workloads/decode.yaml").string();
};

TEST_F(InputFiles, WorkloadAndHardwareFiles) {
  expect_refused(run_gpusim({"run", dir.path().string(), "--hw", "h100"}),
                 dir.path().string() + ": not a regular file (a directory)");
  expect_refused(run_gpusim({"run", fifo.string(), "--hw", "h100"}), fifo.string() + ": not a regular file (a FIFO)");
  expect_refused(run_gpusim({"run", (dir.path() / "none.yaml").string(), "--hw", "h100"}), "none.yaml: no such file");
  expect_refused(run_gpusim({"run", decode, "--hw", fifo.string()}), fifo.string() + ": not a regular file (a FIFO)");
  expect_refused(run_gpusim({"run", decode, "--hw", "/dev/zero"}), "/dev/zero: not a regular file (a device)");
  expect_refused(run_gpusim({"hw", "show", dir.path().string() + "/"}), "not a regular file (a directory)");
}

TEST_F(InputFiles, HfConfigNamesTheWorkloadsKey) {
  const auto w = dir.write("w.yaml", "hf_config: /dev/zero\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\n");
  expect_refused(run_gpusim({"run", w.string(), "--hw", "h100"}),
                 w.string() + ":1: hf_config: not a regular file (a device): /dev/zero");
  const auto missing = dir.write("m.yaml", "hf_config: nope.json\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\n");
  expect_refused(run_gpusim({"run", missing.string(), "--hw", "h100"}), ":1: hf_config: no such file: ");
}

TEST_F(InputFiles, ServeStudyAndTraceFiles) {
  const auto serve = dir.write("s.yaml", "model: llama3-8b\ndtype: bf16\nrequests:\n  file: pipe\n");
  expect_refused(run_gpusim({"serve", serve.string(), "--hw", "h100"}),
                 serve.string() + ":4: requests.file: not a regular file (a FIFO): ");
  expect_refused(run_gpusim({"sweep", fifo.string(), "--out", (dir.path() / "out").string()}),
                 fifo.string() + ": not a regular file (a FIFO)");
  expect_refused(run_gpusim({"replay", fifo.string(), "--hw", "h100"}), fifo.string() + ": not a regular file (a FIFO)");
  expect_refused(run_gpusim({"replay", "/dev/zero", "--hw", "h100"}), "/dev/zero: not a regular file (a device)");
}

}  // namespace
}  // namespace gpusim::cli
