// Studies across processes: `mpirun -np 2 gpusim sweep` writes the same results.csv as one
// process, a rank's journal left by an interrupted MPI run is resumed from, and --no-cache gives
// the same results as the caches.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include "src/mpi_world.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::cli {
namespace {

using gpusim::testing::run_gpusim;
using gpusim::testing::TempDir;

using gpusim::testing::read_file;

// 8 decode points of a small model on two chips.
std::filesystem::path study(const TempDir& dir) {
  dir.write("decode.yaml",
            "model: {layers: 2, d_model: 512, heads: 8, kv_heads: 2, d_ff: 1024, vocab: 2000, norm: rmsnorm, "
            "activation: swiglu, positions: rope}\nphase: decode\nbatch: 1\nseq_len: 100\ndtype: bf16\n");
  return dir.write("study.yaml",
                   "name: mpi\nworkload: decode.yaml\nhw: h100\n"
                   "grid:\n  hw.sm_count: [66, 132]\n  workload.batch: [1, 4]\n  workload.seq_len: [100, 900]\n"
                   "metrics: [total_us, tpot_us, kernels, top_kernel]\n");
}

std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SweepMpi, NoCacheGivesTheSameResults) {
  TempDir dir;
  const auto s = study(dir);
  ASSERT_EQ(run_gpusim({"sweep", s.string(), "--out", (dir.path() / "a").string()}).status, 0);
  const auto r = run_gpusim({"sweep", s.string(), "--out", (dir.path() / "b").string(), "--no-cache", "--threads", "1"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_file(dir.path() / "a" / "results.csv"), read_file(dir.path() / "b" / "results.csv"));
}

// An MPI run interrupted after rank 1 journaled some points (one line cut short): a later run,
// here a single process, reuses them, simulates the rest and leaves one journal.
TEST(SweepMpi, ResumesFromTheJournalsOfRanks) {
  TempDir dir;
  const auto s = study(dir);
  const auto whole = dir.path() / "whole";
  ASSERT_EQ(run_gpusim({"sweep", s.string(), "--out", whole.string()}).status, 0);
  std::istringstream journal(read_file(whole / "journal.csv"));
  std::vector<std::string> lines;
  for (std::string l; std::getline(journal, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 10u);  // fingerprint, header, 8 points
  const auto cut = dir.path() / "cut";
  std::filesystem::create_directories(cut);
  std::ofstream(cut / "journal.csv") << lines[0] << "\n" << lines[1] << "\n" << lines[2] << "\n";
  std::ofstream(cut / "journal.rank1.csv") << lines[0] << "\n" << lines[1] << "\n" << lines[3] << "\n"
                                           << lines[4] << "\n" << lines[5].substr(0, 12) << "\n";
  const auto r = run_gpusim({"sweep", s.string(), "--out", cut.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("8 points (5 simulated, 3 from an earlier run)"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(cut / "results.csv"), read_file(whole / "results.csv"));
  EXPECT_EQ(files_in(cut), files_in(whole));  // the rank's journal was folded into journal.csv
}

TEST(SweepMpi, TwoProcessesWriteWhatOneWrites) {
  if (!built_with_mpi()) GTEST_SKIP() << "built without MPI (libopenmpi-dev not found at configure time)";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun on PATH";
  TempDir dir;
  const auto s = study(dir);
  const auto one = dir.path() / "one";
  ASSERT_EQ(run_gpusim({"sweep", s.string(), "--out", one.string()}).status, 0);
  const auto two = dir.path() / "two";
  // Root may run mpirun in a container only when told so; leak checks stay off for MPI's own
  // allocations under the sanitizer build.
  const std::string command =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
      "ASAN_OPTIONS=detect_leaks=0 mpirun -np 2 " GPUSIM_BINARY " sweep " + s.string() + " --out " +
      two.string() + " --threads 1 > " + (dir.path() / "mpi.log").string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << read_file(dir.path() / "mpi.log");
  EXPECT_NE(read_file(dir.path() / "mpi.log").find("8 points (8 simulated"), std::string::npos) << read_file(dir.path() / "mpi.log");
  EXPECT_EQ(read_file(two / "results.csv"), read_file(one / "results.csv"));
  EXPECT_EQ(files_in(two), files_in(one));
  // The same study resumed by two processes simulates nothing.
  ASSERT_EQ(std::system(command.c_str()), 0) << read_file(dir.path() / "mpi.log");
  EXPECT_NE(read_file(dir.path() / "mpi.log").find("(0 simulated, 8 from an earlier run)"), std::string::npos);
}

// A point that fails in one process (a kernel the chip cannot run) ends every process with the
// error, and none waits for the others forever.
TEST(SweepMpi, AnErrorInOneProcessEndsThemAll) {
  if (!built_with_mpi()) GTEST_SKIP() << "built without MPI (libopenmpi-dev not found at configure time)";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun on PATH";
  TempDir dir;
  dir.write("prefill.yaml",
            "model: {layers: 2, d_model: 512, heads: 8, kv_heads: 2, d_ff: 1024, vocab: 2000, norm: rmsnorm, "
            "activation: swiglu, positions: rope}\nphase: prefill\nbatch: 1\nseq_len: 256\ndtype: bf16\n");
  const auto s = dir.write("study.yaml",
                           "name: err\nworkload: prefill.yaml\nhw: h100\n"
                           "grid:\n  hw.sm.shared_memory_per_cta: [227KiB, 48KiB]\n  workload.batch: [1, 2, 3]\n");
  const auto log = dir.path() / "mpi.log";
  const std::string command =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
      "ASAN_OPTIONS=detect_leaks=0 timeout 120 mpirun -np 2 " GPUSIM_BINARY " sweep " + s.string() + " --out " +
      (dir.path() / "out").string() + " --threads 1 > " + log.string() + " 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_NE(status, 0) << read_file(log);
  EXPECT_NE(WEXITSTATUS(status), 124) << "timed out: a process waited for the others\n" << read_file(log);
  EXPECT_NE(read_file(log).find("cannot run on h100-sxm5"), std::string::npos) << read_file(log);
}

}  // namespace
}  // namespace gpusim::cli
