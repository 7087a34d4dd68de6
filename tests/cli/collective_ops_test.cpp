// Op-level collectives (allreduce, allgather, reducescatter, alltoall, sendrecv) and the ops that
// write tp_steps.py's layer (rope, copy, strided elementwise): they run on a system preset through
// the collective model, their kernels' family names the collective, time grows with the size, and
// a group the system cannot hold is bad input naming the file, line and key.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::cli {
namespace {

using gpusim::testing::run_gpusim;
using gpusim::testing::run_json;
using gpusim::testing::TempDir;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string one_op(const std::string& op) { return "name: c\ndtype: bf16\nops:\n  - " + op + "\n"; }

TEST(CollectiveOps, RunOnDgxH100WithTheirFamily) {
  TempDir dir;
  for (const std::string kind : {"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"}) {
    SCOPED_TRACE(kind);
    const auto file = dir.write(kind + ".yaml", one_op("{op: " + kind + ", n: 8388608, gpus: 4}"));
    const auto j = run_json(file.string(), "dgx-h100");
    ASSERT_TRUE(j.contains("kernels"));
    ASSERT_EQ(j["kernels"].size(), 1u);
    EXPECT_EQ(j["kernels"][0]["family"], kind);
    EXPECT_TRUE(j["kernels"][0]["name"].get<std::string>().starts_with("ncclDevKernel_")) << j["kernels"][0]["name"];
    EXPECT_GT(j["total_us"].get<double>(), 0);
  }
}

TEST(CollectiveOps, TimeGrowsWithSizeAndBytesEqualsElements) {
  TempDir dir;
  double last = 0;
  for (const long long n : {1LL << 16, 1LL << 20, 1LL << 24, 1LL << 28}) {
    const auto file = dir.write("ar.yaml", one_op("{op: allreduce, n: " + std::to_string(n) + ", gpus: 8}"));
    const double us = run_json(file.string(), "dgx-h100")["kernel_time_us"].get<double>();
    EXPECT_GT(us, last) << n;
    last = us;
  }
  // `bytes` is the same buffer as `n` elements of the dtype.
  const auto by_n = dir.write("n.yaml", one_op("{op: allgather, n: 1048576, gpus: 2}"));
  const auto by_bytes = dir.write("b.yaml", one_op("{op: allgather, bytes: 2097152, gpus: 2}"));
  EXPECT_EQ(run_json(by_n.string(), "dgx-h100")["kernel_time_us"], run_json(by_bytes.string(), "dgx-h100")["kernel_time_us"]);
}

TEST(CollectiveOps, GroupTheSystemCannotHoldIsBadInput) {
  TempDir dir;
  const auto file = dir.write("bad.yaml", one_op("{op: allreduce, n: 1024, gpus: 16}"));
  auto r = run_gpusim({"run", file.string(), "--hw", "dgx-h100"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, file.string() + ":4")) << r.err;
  EXPECT_TRUE(contains(r.err, "ops[0].gpus")) << r.err;
  // A chip alone has no interconnect.
  r = run_gpusim({"run", dir.write("one.yaml", one_op("{op: allreduce, n: 1024, gpus: 2}")).string(), "--hw", "h100"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "ops[0].gpus")) << r.err;
  EXPECT_TRUE(contains(r.err, "interconnect")) << r.err;
  // A group of one, and a size given twice or not at all, are refused when read.
  r = run_gpusim({"run", dir.write("g1.yaml", one_op("{op: allreduce, n: 1024, gpus: 1}")).string(), "--hw", "dgx-h100"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "ops[0].gpus")) << r.err;
  r = run_gpusim({"run", dir.write("nb.yaml", one_op("{op: allreduce, n: 1024, bytes: 2048, gpus: 2}")).string(), "--hw",
                  "dgx-h100"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "ops[0].bytes")) << r.err;
  r = run_gpusim({"run", dir.write("none.yaml", one_op("{op: sendrecv, gpus: 2}")).string(), "--hw", "dgx-h100"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "ops[0].n")) << r.err;
}

// RoPE as written is five kernels (mul, neg, cat, mul, add); `strided: true` takes ATen's strided
// kernel, slower than the vectorized one on the same elements.
TEST(LayerOps, RopeAndStridedElementwise) {
  TempDir dir;
  const auto rope = run_json(dir.write("rope.yaml", one_op("{op: rope, B: 1, S: 1024, H: 32, D: 128}")).string(), "h100");
  ASSERT_EQ(rope["kernels"].size(), 5u);
  EXPECT_TRUE(contains(rope["kernels"][2]["name"].get<std::string>(), "CatArrayBatchedCopy")) << rope["kernels"][2]["name"];
  const auto dense = run_json(dir.write("d.yaml", one_op("{op: silu, n: 16777216}")).string(), "h100");
  const auto strided = run_json(dir.write("s.yaml", one_op("{op: silu, n: 16777216, strided: true}")).string(), "h100");
  EXPECT_TRUE(contains(dense["kernels"][0]["name"].get<std::string>(), "vectorized_elementwise_kernel"));
  EXPECT_FALSE(contains(strided["kernels"][0]["name"].get<std::string>(), "vectorized_elementwise_kernel"));
  EXPECT_GT(strided["kernel_time_us"].get<double>(), dense["kernel_time_us"].get<double>());
  const auto copy = run_json(dir.write("c.yaml", one_op("{op: copy, n: 4096, strided: true}")).string(), "h100");
  EXPECT_TRUE(contains(copy["kernels"][0]["name"].get<std::string>(), "direct_copy_kernel"));
}

}  // namespace
}  // namespace gpusim::cli
