#include "validation/ranking.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace gpusim::validation {
namespace {

TEST(RankAgreement, SameOrderReversedAndOneSwap) {
  const std::vector<double> m{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(rank_agreement(m, {10, 20, 30, 40}).kendall_tau, 1.0);
  EXPECT_DOUBLE_EQ(rank_agreement(m, {4, 3, 2, 1}).kendall_tau, -1.0);
  // One adjacent swap: 5 concordant, 1 discordant pair of 6.
  const auto a = rank_agreement(m, {1, 3, 2, 4});
  EXPECT_NEAR(a.kendall_tau, 4.0 / 6.0, 1e-12);
  EXPECT_NEAR(a.pairs_ordered, 5.0 / 6.0, 1e-12);
}

TEST(RankAgreement, TiesAndTheTenPercentBand) {
  // A simulated tie counts half a pair; tau-b corrects for it: (4 - 1) / sqrt(6 * 5).
  const auto a = rank_agreement({1, 2, 3, 4}, {1, 1, 3, 2});
  EXPECT_NEAR(a.pairs_ordered, 4.5 / 6.0, 1e-12);
  EXPECT_NEAR(a.kendall_tau, 3.0 / std::sqrt(30.0), 1e-12);
  EXPECT_DOUBLE_EQ(rank_agreement({100, 200, 300}, {109, 250, 300}).within_10pct, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(rank_agreement({5}, {6}).kendall_tau, 0.0);
  EXPECT_THROW(rank_agreement({1, 2}, {1}), std::logic_error);
}

}  // namespace
}  // namespace gpusim::validation
