// run_functional_checks (for `gpusim validate`): every row passes on h100, and the rows carry
// what the lead's report needs.
#include <gtest/gtest.h>

#include "functional_test_support.h"
#include "validation/functional/functional_checks.h"

namespace gpusim::functional {
namespace {

TEST(FunctionalChecks, EveryCheckPassesOnH100) {
  const auto checks = run_functional_checks(testing::h100());
  ASSERT_GE(checks.size(), 15u);
  for (const auto& c : checks) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(c.passed) << "error " << c.relative_error << ", FLOPs " << c.flops_functional << " vs "
                          << c.flops_model << ", bytes " << c.bytes_functional << " vs " << c.bytes_model
                          << " (" << c.note << ")";
    EXPECT_LT(c.relative_error, c.error_bound);
    EXPECT_GT(c.bytes_functional, 0);
    EXPECT_FALSE(c.note.empty());
  }
}

}  // namespace
}  // namespace gpusim::functional
