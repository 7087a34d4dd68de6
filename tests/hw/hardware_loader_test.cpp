#include "hw/hardware_loader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "hw/hardware_schema.h"
#include "sim/error.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::hw {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::TempDir;

PresetCatalog catalog() { return PresetCatalog(config_dir() / "hw"); }

using gpusim::testing::read_file;

// Loads and expects a ConfigError; returns it for assertions on file, line and key.
ConfigError load_error(const std::string& hw, std::vector<HardwareOverride> overrides = {}) {
  try {
    load_hardware(hw, catalog(), overrides);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError for " << hw;
  return ConfigError("", 0, "", "");
}

TEST(HardwarePresets, AllFourLoadWithEveryFieldSourced) {
  for (const char* name : {"h100-sxm5", "h200-sxm", "rtx5090", "a100-sxm4-80gb"}) {
    const HardwareSpec spec = load_hardware(name, catalog());
    EXPECT_EQ(spec.name, name);
    for (const auto& f : hardware_fields()) {
      const auto& origin = spec.origins.at(std::string(f.path));
      EXPECT_FALSE(origin.source.empty()) << name << " " << f.path << " has no source comment";
    }
  }
}

TEST(HardwarePresets, ShortNamesResolveToPresets) {
  EXPECT_EQ(load_hardware("h100", catalog()).name, "h100-sxm5");
  EXPECT_EQ(load_hardware("H100", catalog()).name, "h100-sxm5");
  EXPECT_EQ(load_hardware("h200", catalog()).name, "h200-sxm");
  EXPECT_EQ(load_hardware("rtx5090", catalog()).name, "rtx5090");
  EXPECT_EQ(load_hardware("a100", catalog()).name, "a100-sxm4-80gb");
}

TEST(HardwarePresets, H100ValuesAndDerivedPeaks) {
  const HardwareSpec h = load_hardware("h100", catalog());
  EXPECT_EQ(h.sm_count, 132);
  EXPECT_EQ(h.sm.max_warps, 64);
  EXPECT_EQ(h.sm.shared_memory, 228 * 1024);
  EXPECT_EQ(h.l2.size, 50 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(h.dram.bandwidth, 3.35e12);
  // The datasheet's 989.4 TFLOP/s dense bf16 is 132 SMs x 4096 flop/clk x 1.83 GHz.
  EXPECT_NEAR(h.tensor_flops_per_cycle(DType::kBf16) * h.sm_count * 1.83e9, 989.4e12, 0.1e12);
  EXPECT_EQ(h.tensor_flops_per_cycle(DType::kFp32), 0);
  EXPECT_GT(h.peak_tensor_flops(DType::kFp8), h.peak_tensor_flops(DType::kBf16));
}

TEST(HardwarePresets, H200InheritsComputeAndReplacesMemory) {
  const HardwareSpec h100 = load_hardware("h100", catalog());
  const HardwareSpec h200 = load_hardware("h200", catalog());
  EXPECT_EQ(h200.sm_count, h100.sm_count);
  EXPECT_EQ(h200.throughput.tensor_bf16, h100.throughput.tensor_bf16);
  EXPECT_DOUBLE_EQ(h200.dram.bandwidth, 4.8e12);
  EXPECT_EQ(h200.dram.kind, "HBM3e");
  // Inherited values keep the base file as their origin.
  EXPECT_NE(h200.origins.at("sm_count").file.find("h100-sxm5.yaml"), std::string::npos);
  EXPECT_NE(h200.origins.at("dram.capacity").file.find("h200-sxm.yaml"), std::string::npos);
}

TEST(HardwareFile, BaseInheritanceAndCommandLineOverridesStack) {
  TempDir dir;
  const auto file = dir.write("npu.yaml",
                              "base: h100\n"
                              "description: what-if\n"
                              "sm_count: 80   # fewer SMs\n"
                              "l2:\n"
                              "  size: 256MiB # bigger L2\n");
  const HardwareSpec s =
      load_hardware(file.string(), catalog(), std::vector<HardwareOverride>{{"l2.size", "128MiB"}});
  EXPECT_EQ(s.name, "npu");
  EXPECT_EQ(s.sm_count, 80);
  EXPECT_EQ(s.origins.at("sm_count").source, "fewer SMs");
  EXPECT_EQ(s.origins.at("sm_count").line, 3);
  EXPECT_EQ(s.l2.size, 128 * 1024 * 1024);  // the command line wins over the file
  EXPECT_EQ(s.origins.at("l2.size").file, "command line");
  EXPECT_EQ(s.sm.max_threads, 2048);  // inherited
}

TEST(HardwareFile, ResolvedYamlOfShowLoadsBackIdentically) {
  // `hw show --format yaml` is produced from format_field; loading it must give the same spec.
  TempDir dir;
  const PresetCatalog all(std::vector{config_dir() / "hw", config_dir() / "systems"});
  const HardwareSpec original = load_hardware("dgx-h100", all);
  // The command's own output (nested sections: system.interconnect.*), for a system and a chip.
  for (const std::string name : {"rtx5090", "dgx-h100"}) {
    const auto shown = gpusim::testing::run_gpusim({"hw", "show", name, "--format", "yaml"});
    ASSERT_EQ(shown.status, 0) << shown.err;
    const HardwareSpec a = load_hardware(name, all);
    const HardwareSpec b = load_hardware(dir.write(name + ".yaml", shown.out).string(), catalog());
    for (const auto& f : hardware_fields()) EXPECT_EQ(format_field(b, f), format_field(a, f)) << name << " " << f.path;
  }
  const std::string yaml = gpusim::testing::run_gpusim({"hw", "show", "dgx-h100", "--format", "yaml"}).out;
  const HardwareSpec copy = load_hardware(dir.write("copy.yaml", yaml).string(), catalog());
  for (const auto& f : hardware_fields()) {
    EXPECT_EQ(format_field(copy, f), format_field(original, f)) << f.path;
  }
  EXPECT_EQ(copy.l2.hit_latency, original.l2.hit_latency);
  EXPECT_EQ(copy.dram.efficiency, original.dram.efficiency);
}

struct BadCase {
  std::string name;
  std::string yaml;
  int line;
  std::string key;
  std::string message_part;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadHardwareFile : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadHardwareFile, IsAConfigErrorNamingFileLineAndKey) {
  const BadCase& c = GetParam();
  TempDir dir;
  const auto file = dir.write("bad.yaml", c.yaml);
  const ConfigError e = load_error(file.string());
  EXPECT_EQ(e.file(), file.string());
  EXPECT_EQ(e.line(), c.line) << e.what();
  EXPECT_EQ(e.key(), c.key) << e.what();
  EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << e.what();
  // The message itself names all three.
  EXPECT_NE(std::string(e.what()).find(file.string() + ":" + std::to_string(c.line)),
            std::string::npos)
      << e.what();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadHardwareFile,
    ::testing::Values(
        BadCase{"unknown_key", "base: h100\nl2:\n  sise: 50MiB\n", 3, "l2.sise", "unknown key"},
        BadCase{"unknown_section", "base: h100\ncache:\n  size: 1MiB\n", 2, "cache", "unknown section"},
        BadCase{"unknown_top_key", "base: h100\nsms: 12\n", 2, "sms", "unknown key"},
        BadCase{"wrong_unit", "base: h100\ndram:\n  bandwidth: 3.35TB\n", 3,
                "dram.bandwidth", "is a size"},
        BadCase{"missing_unit", "base: h100\nclocks:\n  boost: 1980\n", 3, "clocks.boost", "no unit"},
        BadCase{"zero_sms", "base: h100\nsm_count: 0\n", 2, "sm_count", "out of range"},
        BadCase{"negative_sms", "base: h100\nsm_count: -4\n", 2, "sm_count", "out of range"},
        BadCase{"fractional_sms", "base: h100\nsm_count: 13.5\n", 2, "sm_count", "whole number"},
        BadCase{"absurd_l2", "base: h100\nl2:\n  size: 1TB\n", 3, "l2.size", "out of range"},
        BadCase{"block_larger_than_sm", "base: h100\nsm:\n  max_threads_per_cta: 4096\n", 3,
                "sm.max_threads_per_cta", "larger than the SM"},
        BadCase{"warps_threads_mismatch", "base: h100\nsm:\n  max_warps: 48\n", 3, "sm.max_warps",
                "sm.max_threads is 2048"},
        BadCase{"cta_smem_over_sm", "base: h100\nsm:\n  shared_memory_per_cta: 300KiB\n", 3,
                "sm.shared_memory_per_cta", "exceeds"},
        BadCase{"sustained_over_boost", "base: h100\nclocks:\n  sustained_other: 2.5GHz\n", 3,
                "clocks.sustained_other", "cannot exceed"},
        BadCase{"efficiency_over_one", "base: h100\ndram:\n  efficiency: 120%\n", 3,
                "dram.efficiency", "out of range"},
        BadCase{"unknown_dram_kind", "base: h100\ndram:\n  kind: HBM9\n", 3, "dram.kind", "not one of"},
        BadCase{"bad_arch", "base: h100\narch: hopper\n", 2, "arch", "compute capability"},
        BadCase{"duplicate_key", "base: h100\nsm_count: 10\nsm_count: 12\n", 3, "sm_count", "duplicate"},
        BadCase{"list_value", "base: h100\nsm_count: [1, 2]\n", 2, "sm_count", "single value"},
        BadCase{"empty_value", "base: h100\nsm_count:\n", 2, "sm_count", "no value"},
        BadCase{"section_as_value", "base: h100\nl2: 50MiB\n", 2, "l2", "is a section"},
        BadCase{"unknown_base", "base: h900\n", 1, "base", "unknown preset"},
        BadCase{"malformed_yaml", "base: h100\nl2:\n  size: [50MiB\n", 4, "", "malformed YAML"},
        BadCase{"not_a_mapping", "- 1\n- 2\n", 1, "(document)", "expected a mapping"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

TEST(HardwareFile, MissingRequiredKeyNamesTheKeyAndItsSection) {
  TempDir dir;
  std::string text = read_file(config_dir() / "hw" / "h100-sxm5.yaml");
  const auto at = text.find("  hit_latency:");
  ASSERT_NE(at, std::string::npos);
  text.erase(at, text.find('\n', at) + 1 - at);
  const auto file = dir.write("h100-copy.yaml", text);
  const ConfigError e = load_error(file.string());
  EXPECT_EQ(e.key(), "l2.hit_latency");
  EXPECT_NE(std::string(e.what()).find("missing required key"), std::string::npos);
  // Line of the "l2:" section in the copied file.
  int l2_line = 0, n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    ++n;
    if (line.rfind("l2:", 0) == 0) l2_line = n;
  }
  EXPECT_EQ(e.line(), l2_line);
}

TEST(HardwareFile, MissingFileIsAConfigError) {
  const ConfigError e = load_error("/nonexistent/gpu.yaml");
  EXPECT_EQ(e.file(), "/nonexistent/gpu.yaml");
}

TEST(HardwareFile, BaseCycleIsDetected) {
  TempDir dir;
  dir.write("a.yaml", "base: ./b.yaml\n");
  dir.write("b.yaml", "base: ./a.yaml\n");
  const ConfigError e = load_error((dir.path() / "a.yaml").string());
  EXPECT_EQ(e.key(), "base");
  EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos);
}

TEST(HardwareOverrides, UnknownKeyAndBadValueNameTheCommandLine) {
  const ConfigError unknown = load_error("h100", {{"l2.sise", "1MiB"}});
  EXPECT_EQ(unknown.file(), "command line");
  EXPECT_EQ(unknown.key(), "hw.l2.sise");
  EXPECT_NE(std::string(unknown.what()).find("l2.size"), std::string::npos);  // lists l2 keys

  const ConfigError bad = load_error("h100", {{"sm_count", "zero"}});
  EXPECT_EQ(bad.file(), "command line");
  EXPECT_EQ(bad.key(), "hw.sm_count");

  const ConfigError absurd = load_error("h100", {{"sm.max_threads_per_cta", "4096"}});
  EXPECT_EQ(absurd.key(), "hw.sm.max_threads_per_cta");
}

TEST(HardwareOverrides, UnknownPresetListsThePresets) {
  const ConfigError e = load_error("h900");
  EXPECT_EQ(e.key(), "--hw");
  EXPECT_NE(std::string(e.what()).find("h100-sxm5 (h100"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace gpusim::hw
