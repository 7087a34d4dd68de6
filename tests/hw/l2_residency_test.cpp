// L2 residency (by name and by id): least recently used out, partial residency of the oldest
// tensor, against a plain reference (a list rebuilt on every touch) over long random sequences of touches.
#include "hw/l2_residency.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace gpusim::hw {
namespace {

// The rule, written as plainly as possible: the touched tensor leaves the list, the oldest
// tensors give up bytes (the oldest first) until what it keeps fits, and it goes in front.
class ReferenceL2 {
 public:
  explicit ReferenceL2(std::int64_t capacity) : capacity_(capacity) {}
  std::int64_t resident(const std::string& t) const {
    for (const auto& [name, bytes] : lru_) {
      if (name == t) return bytes;
    }
    return 0;
  }
  // The bytes of the tensors in front of t (0 when t is not resident).
  double newer_bytes(const std::string& t) const {
    double sum = 0;
    for (const auto& [name, bytes] : lru_) {
      if (name == t) return sum;
      sum += static_cast<double>(bytes);
    }
    return 0;
  }
  void touch(const std::string& t, std::int64_t bytes) {
    std::erase_if(lru_, [&](const auto& e) { return e.first == t; });
    const std::int64_t keep = std::min(bytes, capacity_);
    std::int64_t used = 0;
    for (const auto& e : lru_) used += e.second;
    while (used + keep > capacity_ && !lru_.empty()) {
      const std::int64_t evict = std::min(lru_.back().second, used + keep - capacity_);
      lru_.back().second -= evict;
      used -= evict;
      if (lru_.back().second == 0) lru_.pop_back();
    }
    if (keep > 0) lru_.insert(lru_.begin(), {t, keep});
  }

 private:
  std::int64_t capacity_;
  std::vector<std::pair<std::string, std::int64_t>> lru_;  // front: most recent
};

TEST(L2Residency, MatchesThePlainRuleOnRandomTouches) {
  for (const std::int64_t capacity : {1000, 4096, 50000}) {
    std::mt19937_64 random(static_cast<std::uint64_t>(capacity));
    L2Residency l2(capacity);
    DenseL2Residency dense(capacity);  // the same rule by tensor id
    ReferenceL2 reference(capacity);
    std::vector<double> last_traffic(40, 0.0);
    for (int step = 0; step < 5000; ++step) {
      const auto id = static_cast<std::int32_t>(random() % 40);
      const std::string t = "t" + std::to_string(id);
      // Mostly small tensors, some larger than the whole cache, some empty.
      const std::int64_t bytes = random() % 10 == 0 ? static_cast<std::int64_t>(random() % (3 * capacity))
                                 : random() % 25 == 0 ? 0
                                                      : static_cast<std::int64_t>(random() % (capacity / 4));
      const double traffic = static_cast<double>(step);  // any value; kept with the tensor
      l2.touch(t, bytes, traffic);
      dense.touch(id, bytes, traffic);
      reference.touch(t, bytes);
      last_traffic[static_cast<std::size_t>(id)] = traffic;
      for (int k = 0; k < 40; ++k) {
        const std::string name = "t" + std::to_string(k);
        ASSERT_EQ(l2.resident(name), reference.resident(name)) << "step " << step << ", " << name;
        ASSERT_EQ(dense.resident(k), reference.resident(name)) << "step " << step << ", id " << k;
        // The stack distance before the tensor, and the traffic of the kernel that last
        // touched it (hw::pass_through_l2), the same by name and by id.
        const double newer = reference.newer_bytes(name), unlimited = 1e18;
        const L2StackPlace by_name = l2.place(name, unlimited), by_id = dense.place(k, unlimited);
        ASSERT_EQ(by_name.newer_bytes, newer) << "step " << step << ", " << name;
        ASSERT_EQ(by_id.newer_bytes, newer) << "step " << step << ", id " << k;
        const double kept = reference.resident(name) > 0 ? last_traffic[static_cast<std::size_t>(k)] : 0.0;
        ASSERT_EQ(by_name.traffic, kept) << "step " << step << ", " << name;
        ASSERT_EQ(by_id.traffic, kept) << "step " << step << ", id " << k;
      }
    }
  }
}

TEST(L2Residency, KeepsTheMostRecentBytesOfATensorLargerThanTheCache) {
  L2Residency l2(100);
  l2.touch("a", 60);
  l2.touch("b", 30);
  EXPECT_EQ(l2.resident("a"), 60);
  l2.touch("c", 50);  // evicts 40 bytes of a, the oldest
  EXPECT_EQ(l2.resident("a"), 20);
  EXPECT_EQ(l2.resident("b"), 30);
  l2.touch("a", 500);  // a again, larger than everything: only its last 100 bytes stay
  EXPECT_EQ(l2.resident("a"), 100);
  EXPECT_EQ(l2.resident("b"), 0);
  EXPECT_EQ(l2.resident("c"), 0);
}

// The reuse curve's table (its share and integral, tabulated once per steepness) against the
// formula: the share 1 / (1 + (D / half)^k) and its mean over a range, by a fine midpoint sum.
TEST(L2ReuseCurve, TableMatchesTheFormula) {
  for (const double k : {4.0, 6.0}) {
    const double half = 50.0 * (1 << 20);
    const L2ReuseCurve curve(half, k);
    const auto share = [&](double d) { return 1.0 / (1.0 + std::pow(d / half, k)); };
    for (double d = 0; d < curve.horizon(); d += half / 37) {
      ASSERT_NEAR(curve.found(d), share(d), 1e-6) << "k " << k << ", d " << d;
    }
    EXPECT_EQ(curve.found(1.01 * curve.horizon()), 0.0);  // forgotten past the horizon
    EXPECT_NEAR(share(curve.horizon()), 1e-3, 1e-9);
    for (const auto& [from, to] : {std::pair{0.0, 0.5}, {0.3, 2.1}, {1.5, 0.2}, {0.9, 1.1}, {2.0, 2.0}}) {
      double sum = 0;
      constexpr int n = 100000;
      for (int i = 0; i < n; ++i) {
        const double d = (from + (to - from) * (i + 0.5) / n) * half;
        sum += d < curve.horizon() ? share(d) : 0.0;
      }
      EXPECT_NEAR(curve.mean_found(from * half, to * half), sum / n, 1e-5) << from << " -> " << to;
    }
  }
}

}  // namespace
}  // namespace gpusim::hw
