// TorchInductor's Triton kernels (models/inductor_kernels.cpp): launch configurations as
// validation/data/hf_train4_h100.json.gz records them, and the latency structure (a looped
// reduction's iterations, the store of its last pass) against the chip.
#include "models/inductor_kernels.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/gpu_engine.h"
#include "sim/error.h"
#include "tests/models/model_test_support.h"

namespace gpusim::models {
namespace {

const hw::HardwareSpec& h100() {
  static const hw::HardwareSpec spec = testing::preset("h100");
  return spec;
}

// The launch's duration (us) alone on an idle H100 with a cold L2.
double us(const hw::Launch& l) {
  const auto r = hw::run_engine(h100(), hw::LaunchMode::kGraph, {hw::KernelNode{l, "op", 0, {}, std::nullopt}});
  return r.kernels.front().duration().us();
}

hw::TensorUse use(const std::string& name, double bytes) { return {name, static_cast<std::int64_t>(bytes)}; }

TritonKernel kernel(std::int64_t x, std::int64_t r, double read, double write) {
  TritonKernel k;
  k.name = "triton_test";
  k.xnumel = x;
  k.rnumel = r;
  k.reads = {use("in", read)};
  k.writes = {use("out", write)};
  return k;
}

TEST(InductorKernels, LaunchConfigurationsAsRecorded) {
  // SiLU-and-mul over 2048 x 8192 (Llama 3.2 1B at 4 x 512): 1,024 elements a block of 4 warps.
  const auto poi = lower_triton(kernel(2048L * 8192, 0, 2.0 * 2 * 2048 * 8192, 2.0 * 2048 * 8192), h100());
  EXPECT_EQ(poi.grid.x, 16384);
  EXPECT_EQ(poi.block.x, 128);
  EXPECT_EQ(poi.family, "triton");
  // RMSNorm over rows of 2048: two rows a block of 16 warps (looped); rows of 1024 fit a block.
  EXPECT_EQ(lower_triton(kernel(2048, 2048, 8e6, 8e6), h100()).grid.x, 1024);
  EXPECT_EQ(lower_triton(kernel(2048, 2048, 8e6, 8e6), h100()).block.x, 512);
  EXPECT_EQ(lower_triton(kernel(4096, 1024, 8e6, 8e6), h100()).grid.x, 4096);
  // The loss over a 128,256-entry vocabulary: a row a block.
  EXPECT_EQ(lower_triton(kernel(2048, 128256, 525e6, 16e3), h100()).grid.x, 2048);
  // A norm weight's gradient over 2048 x 2048: the partial sums, then their sum (16 blocks).
  const auto sum = lower_triton_column_sum("mul_sum", 2048, 2048, {use("dy", 8e6), use("x", 8e6)}, use("dw", 4096), h100());
  ASSERT_EQ(sum.size(), 2u);
  EXPECT_EQ(sum[0].grid.x, 2048);
  EXPECT_EQ(sum[1].grid.x, 16);
  EXPECT_EQ(sum[0].writes.front().bytes, sum[1].reads.front().bytes);  // the partials pass through
}

TEST(InductorKernels, LoopedReductionsPayTheirIterations) {
  // A log-sum-exp over 2048 rows of 128,256: each block's loads wait an iteration at a time, so
  // the kernel streams well below the DRAM's achievable bandwidth (1.5 TB/s measured).
  const double bytes = 2048.0 * 128256 * 2;
  const double looped = us(lower_triton(kernel(2048, 128256, bytes, 16e3), h100()));
  EXPECT_GT(looped, 1.5 * bytes / h100().dram.achievable_bandwidth() * 1e6);
  // A second pass over the rows costs its iterations again; storing the rows costs more.
  auto two = kernel(2048, 128256, bytes, 16e3);
  two.passes = 2;
  EXPECT_GT(us(lower_triton(two, h100())), 1.5 * looped);
  EXPECT_GT(us(lower_triton(kernel(2048, 128256, bytes, bytes), h100())), looped);
  // Bad sizes are refused.
  EXPECT_THROW(lower_triton(kernel(0, 0, 1, 1), h100()), ModelError);
}

}  // namespace
}  // namespace gpusim::models
