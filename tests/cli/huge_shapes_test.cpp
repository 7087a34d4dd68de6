// Shapes too big for gpusim's counters are bad input with the op named, not an internal error:
// tensors past 64-bit byte counts, and ops past the simulated clock (picoseconds in 64 bits).
#include <gtest/gtest.h>

#include <string>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::cli {
namespace {

using gpusim::testing::CliResult;
using gpusim::testing::run_gpusim;
using gpusim::testing::TempDir;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

CliResult run_ops(const TempDir& dir, const std::string& op) {
  const auto w = dir.write("big.yaml", "dtype: bf16\nops:\n  - {op: add, n: 1024}\n  - " + op + "\n");
  return run_gpusim({"run", w.string(), "--hw", "h100"});
}

TEST(HugeShapes, ClockOverflowNamesTheOp) {
  const TempDir dir;
  const CliResult r = run_ops(dir, "{op: matmul, M: 99999999, N: 99999999, K: 99999999, dtype: bf16}");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "big.yaml:4: ops[1]: this op's simulated time overflows gpusim's clock")) << r.err;
  EXPECT_TRUE(contains(r.err, "the clock holds 2562")) << r.err;
  // Large but within the clock: it runs.
  EXPECT_EQ(run_ops(dir, "{op: matmul, M: 65536, N: 65536, K: 65536}").status, 0);
}

TEST(HugeShapes, TensorsPastByteCountsAreRefused) {
  const TempDir dir;
  CliResult r = run_ops(dir, "{op: sdpa, B: 1099511627776, H: 1099511627776, S: 64, D: 64, causal: true}");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "big.yaml:4: ops[1]: Q[B,H,S,D] would hold")) << r.err;
  r = run_ops(dir, "{op: naive_attention, B: 1, H: 1, S: 1099511627776, D: 64}");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "the scores [B,H,S,S] would hold")) << r.err;
}

}  // namespace
}  // namespace gpusim::cli
