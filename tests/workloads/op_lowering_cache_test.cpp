// The step lowering's elementwise cache is exact: whatever was lowered before, a problem comes
// back as models::lower_elementwise lowers it alone (names put back, launch for launch).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "models/families.h"
#include "models/kernel_model.h"
#include "tests/support/temp_files.h"
#include "workloads/op_lowering_cache.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::config_dir;

void expect_same(const std::vector<hw::Launch>& a, const std::vector<hw::Launch>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].grid.x, b[i].grid.x);
    EXPECT_EQ(a[i].block.x, b[i].block.x);
    ASSERT_EQ(a[i].reads.size(), b[i].reads.size());
    for (std::size_t r = 0; r < a[i].reads.size(); ++r) EXPECT_EQ(a[i].reads[r].tensor, b[i].reads[r].tensor);
    ASSERT_EQ(a[i].writes.size(), b[i].writes.size());
    for (std::size_t w = 0; w < a[i].writes.size(); ++w) EXPECT_EQ(a[i].writes[w].tensor, b[i].writes[w].tensor);
  }
}

// An fp32 product of an fp32 and a bf16 tensor (autocast's RoPE) and the same product of two
// fp32 tensors differ only in their inputs' types: two kernels, not one cached for both.
TEST(OpLoweringCache, ElementwiseCacheKeepsInputTypesApart) {
  const auto models = models::default_kernel_models();
  const auto hw = hw::load_hardware("h100", hw::PresetCatalog(config_dir() / "hw"), {});
  models::ElementwiseProblem plain;
  plain.func = models::EwFunc::kMul;
  plain.n = 1 << 23;
  plain.in = plain.out = hw::DType::kFp32;
  plain.strided = true;
  plain.inputs = {"a", "b"};
  plain.output = "c";
  models::ElementwiseProblem mixed = plain;
  mixed.input_types = {hw::DType::kBf16, hw::DType::kFp32};
  mixed.inputs = {"x", "y"};
  mixed.output = "z";

  for (const bool plain_first : {true, false}) {
    OpLoweringCache cache(hw, models);
    const auto first = cache.lower_elementwise(plain_first ? plain : mixed);
    const auto second = cache.lower_elementwise(plain_first ? mixed : plain);
    expect_same(first, models::lower_elementwise(plain_first ? plain : mixed, hw, ""));
    expect_same(second, models::lower_elementwise(plain_first ? mixed : plain, hw, ""));
  }
  // And they are different kernels: the promoting one loads with casts, 4 elements a thread.
  const auto p = models::lower_elementwise(plain, hw, "");
  const auto m = models::lower_elementwise(mixed, hw, "");
  EXPECT_NE(p.front().name, m.front().name);
  EXPECT_EQ(m.front().grid.x * 2, p.front().grid.x);
}

}  // namespace
}  // namespace gpusim::workloads
