// Numbers in the CSV and JSON files: 9 significant digits, shortest form (docs/results.md).
#include "src/number_format.h"

#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "tests/support/cli_runner.h"

namespace gpusim::cli {
namespace {

TEST(NumberFormat, NineSignificantDigitsInShortestForm) {
  EXPECT_EQ(number(9412.278038999999), "9412.27804");
  EXPECT_EQ(number(121.52983690042423), "121.529837");
  EXPECT_EQ(number(0.1 + 0.2), "0.3");
  EXPECT_EQ(number(42.0), "42");
  EXPECT_EQ(number(1e15), "1000000000000000");
  EXPECT_EQ(number(123456789012.0), "123456789000");
  EXPECT_EQ(number(0), "0");
  EXPECT_EQ(number(-0.0), "0");
  EXPECT_EQ(number(-2.5), "-2.5");
  EXPECT_EQ(number(1.5e-7), "1.5e-07");
  EXPECT_EQ(rounded(rounded(2.0 / 3)), rounded(2.0 / 3));  // rounding twice changes nothing
}

TEST(NumberFormat, JsonValuesAreRoundedWhereverTheyAre) {
  nlohmann::ordered_json j = {{"a", 9412.278038999999}, {"n", 7}, {"list", {121.52983690042423, "text"}},
                              {"nested", {{"b", 0.1 + 0.2}}}};
  round_numbers(j);
  EXPECT_EQ(dump_json(j), R"({"a":9412.27804,"n":7,"list":[121.529837,"text"],"nested":{"b":0.3}})");
  // nlohmann's own dump prints this rounded value long; dump_json does not.
  EXPECT_EQ(dump_json(rounded(1012.636729999)), "1012.63673");
  // Otherwise it writes what nlohmann writes, indented or not.
  const nlohmann::ordered_json doc = {{"s", "a\"b"}, {"one", 1.0}, {"e", nlohmann::ordered_json::array()},
                                      {"o", nlohmann::ordered_json::object()}, {"x", {{"y", {1, true, nullptr}}}}};
  EXPECT_EQ(dump_json(doc, 2), doc.dump(2));
  EXPECT_EQ(dump_json(doc), doc.dump());
}

// The significant digits of a number as written, zeros at either end aside ("0.00123" has 3,
// "1.5e-07" 2, "16060522500.0" 9).
int significant_digits(const std::string& text) {
  std::string digits;
  for (const char c : text.substr(0, text.find_first_of("eE"))) {
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  }
  const auto first = digits.find_first_not_of('0');
  if (first == std::string::npos) return 0;
  return static_cast<int>(digits.find_last_not_of('0') - first + 1);
}

TEST(NumberFormat, RunOutputsCarryNoFloatNoise) {
  const std::string w = (gpusim::testing::config_dir() / "workloads/decode.yaml").string();
  const std::regex number_pattern(R"(-?\d+(\.\d+)?([eE][-+]?\d+)?)");
  for (const std::string format : {"csv", "json"}) {
    const auto r = gpusim::testing::run_gpusim({"run", w, "--hw", "h100", "--format", format});
    ASSERT_EQ(r.status, 0) << r.err;
    int decimals = 0;
    for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), number_pattern); it != std::sregex_iterator(); ++it) {
      const std::string n = it->str();
      if (n.find_first_of(".eE") == std::string::npos) continue;  // an integer: a count, exact
      EXPECT_LE(significant_digits(n), 9) << format << ": " << n;
      ++decimals;
    }
    EXPECT_GT(decimals, 100) << format;  // the check saw the metrics
  }
}

}  // namespace
}  // namespace gpusim::cli
