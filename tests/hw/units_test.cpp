#include "hw/units.h"

#include <gtest/gtest.h>

namespace gpusim::hw {
namespace {

double parse_ok(const std::string& text, Quantity q) {
  const auto r = parse_quantity(text, q);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error;
  return r.value;
}

std::string parse_error(const std::string& text, Quantity q) {
  const auto r = parse_quantity(text, q);
  EXPECT_FALSE(r.ok()) << text << " parsed as " << r.value;
  return r.error;
}

TEST(Units, ParsesEachQuantityWithAndWithoutSpace) {
  EXPECT_DOUBLE_EQ(parse_ok("3.35TB/s", Quantity::kBandwidth), 3.35e12);
  EXPECT_DOUBLE_EQ(parse_ok("900 GB/s", Quantity::kBandwidth), 900e9);
  EXPECT_DOUBLE_EQ(parse_ok("1GiB/s", Quantity::kBandwidth), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_ok("50MiB", Quantity::kBytes), 50.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_ok("80GB", Quantity::kBytes), 80e9);
  EXPECT_DOUBLE_EQ(parse_ok("1.5KiB", Quantity::kBytes), 1536);
  EXPECT_DOUBLE_EQ(parse_ok("3.35GB", Quantity::kBytes), 3350000000.0);
  EXPECT_DOUBLE_EQ(parse_ok("150109880320B", Quantity::kBytes), 150109880320.0);
  EXPECT_DOUBLE_EQ(parse_ok("1.98GHz", Quantity::kFrequency), 1.98e9);
  EXPECT_DOUBLE_EQ(parse_ok("1410 MHz", Quantity::kFrequency), 1.41e9);
  EXPECT_DOUBLE_EQ(parse_ok("2us", Quantity::kDuration), 2e-6);
  EXPECT_DOUBLE_EQ(parse_ok("2\u00b5s", Quantity::kDuration), 2e-6);
  EXPECT_DOUBLE_EQ(parse_ok("350ns", Quantity::kDuration), 350e-9);
  EXPECT_DOUBLE_EQ(parse_ok("4096 flop/clk", Quantity::kFlopsPerCycle), 4096);
  EXPECT_DOUBLE_EQ(parse_ok("16 op/clk", Quantity::kOpsPerCycle), 16);
  EXPECT_DOUBLE_EQ(parse_ok("6.5", Quantity::kNumber), 6.5);
  EXPECT_DOUBLE_EQ(parse_ok("132", Quantity::kCount), 132);
}

TEST(Units, MissingUnitIsAnError) {
  EXPECT_NE(parse_error("3.35", Quantity::kBandwidth).find("has no unit"), std::string::npos);
}

TEST(Units, UnitOfAnotherQuantityIsNamed) {
  const std::string e = parse_error("3.35TB", Quantity::kBandwidth);
  EXPECT_NE(e.find("is a size"), std::string::npos) << e;
  EXPECT_NE(e.find("bandwidth"), std::string::npos) << e;
}

TEST(Units, BitsAreRejectedWithAHint) {
  EXPECT_NE(parse_error("900Gb/s", Quantity::kBandwidth).find("bits"), std::string::npos);
}

TEST(Units, WrongCaseGetsASuggestion) {
  EXPECT_NE(parse_error("1.98ghz", Quantity::kFrequency).find("did you mean 'GHz'"),
            std::string::npos);
}

TEST(Units, RejectsGarbageFractionsAndUnitsOnCounts) {
  parse_error("fast", Quantity::kFrequency);
  parse_error("", Quantity::kBytes);
  parse_error("1.5", Quantity::kCount);
  parse_error("132 SMs", Quantity::kCount);
  parse_error("6 steps", Quantity::kNumber);
  parse_error("0.3B", Quantity::kBytes);
  parse_error("inf GB/s", Quantity::kBandwidth);
}

TEST(Units, FormatsInAFormItParsesBack) {
  const std::pair<double, Quantity> cases[] = {
      {50.0 * 1024 * 1024, Quantity::kBytes}, {80e9, Quantity::kBytes},
      {1536, Quantity::kBytes},               {128, Quantity::kBytes},
      {150109880320.0, Quantity::kBytes},     {3350000000.0, Quantity::kBytes},
      {3.35e12, Quantity::kBandwidth},        {1.792e12, Quantity::kBandwidth},
      {1.98e9, Quantity::kFrequency},         {2e-6, Quantity::kDuration},
      {3.5e-7, Quantity::kDuration},          {4096, Quantity::kFlopsPerCycle},
      {16, Quantity::kOpsPerCycle},           {132, Quantity::kCount},
      {6.5, Quantity::kNumber}};
  for (const auto& [value, q] : cases) {
    const std::string text = format_quantity(value, q);
    EXPECT_DOUBLE_EQ(parse_ok(text, q), value) << text;
  }
  EXPECT_EQ(format_quantity(50.0 * 1024 * 1024, Quantity::kBytes), "50MiB");
  EXPECT_EQ(format_quantity(3.35e12, Quantity::kBandwidth), "3.35TB/s");
  EXPECT_EQ(format_quantity(80e9, Quantity::kBytes), "80GB");
  EXPECT_EQ(format_quantity(228 * 1024, Quantity::kBytes), "228KiB");
  EXPECT_EQ(format_quantity(150109880320.0, Quantity::kBytes), "150109880320B");
}

}  // namespace
}  // namespace gpusim::hw
