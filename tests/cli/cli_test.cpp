// The command line, run in-process through run_cli, and once as a real process.
#include "src/cli.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::cli {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::TempDir;

using Result = gpusim::testing::CliResult;

Result run(const std::vector<std::string>& args) { return gpusim::testing::run_gpusim(args); }

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(Cli, HelpAndVersion) {
  const Result help = run({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(contains(help.out, "occupancy --hw NAME")) << help.out;
  EXPECT_EQ(run({}).status, 2);  // no command
  const Result version = run({"--version"});
  EXPECT_EQ(version.status, 0);
  EXPECT_TRUE(contains(version.out, "gpusim " GPUSIM_VERSION));
  // The release and the commit built: a short hash, "-dirty" for uncommitted changes, or
  // "unknown" outside git.
  EXPECT_TRUE(std::regex_match(version.out, std::regex(R"(gpusim \d+\.\d+\.\d+ \(commit ([0-9a-f]{7,}(-dirty)?|unknown)\)\n)")))
      << version.out;
  for (const char* cmd : {"run", "occupancy"}) {
    const Result r = run({cmd, "--help"});
    EXPECT_EQ(r.status, 0) << cmd;
    EXPECT_TRUE(contains(r.out, "Usage: gpusim " + std::string(cmd))) << r.out;
  }
  const Result show_help = run({"hw", "show", "--help"});
  EXPECT_TRUE(contains(show_help.out, "--format")) << show_help.out;
  EXPECT_EQ(run({"help", "occupancy"}).status, 0);
}

TEST(Cli, UnknownCommandOrOptionIsBadInput) {
  const Result r = run({"simulate"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "unknown command 'simulate'")) << r.err;
  const Result opt = run({"occupancy", "--hw", "h100", "--threads", "128", "--regz", "3"});
  EXPECT_EQ(opt.status, 2);
  EXPECT_TRUE(contains(opt.err, "regz")) << opt.err;
}

TEST(Cli, HwListShowsPresetsAndShortNames) {
  const Result r = run({"hw", "list"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"h100-sxm5", "h200-sxm", "rtx5090", "a100-sxm4-80gb", "h100", "a100"}) {
    EXPECT_TRUE(contains(r.out, s)) << s;
  }
}

TEST(Cli, HwShowPrintsUnitsSourcesAndDerivedPeaks) {
  const Result r = run({"hw", "show", "h100"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "h100-sxm5"));
  EXPECT_TRUE(contains(r.out, "3.35TB/s"));
  EXPECT_TRUE(contains(r.out, "50MiB"));
  EXPECT_TRUE(contains(r.out, "DS: 989.4 TFLOP/s dense"));  // a source comment
  EXPECT_TRUE(contains(r.out, "TFLOP/s"));
}

// `hw fit-host` writes a hardware file based on the chip with the fitted host: it loads, keeps
// the chip's values and carries the fit (the shipped session's fit is the preset's own host).
TEST(Cli, HwFitHostWritesAHardwareFileWithTheFittedHost) {
  TempDir dir;
  const auto sweep = gpusim::testing::repo_dir() / "validation" / "data" / "host_walls_h200.json";
  const auto file = dir.path() / "h200-myhost.yaml";
  const Result fit = run({"hw", "fit-host", sweep.string(), "--hw", "h200", "--out", file.string()});
  ASSERT_EQ(fit.status, 0) << fit.err;
  EXPECT_NE(fit.out.find("host.model_kernel_issue 22.4 us"), std::string::npos) << fit.out;
  const Result shown = run({"hw", "show", file.string(), "--format", "json"});
  ASSERT_EQ(shown.status, 0) << shown.err;
  const auto j = nlohmann::json::parse(shown.out);
  EXPECT_EQ(j["fields"]["host.model_kernel_issue"]["value"], "22.4us");
  EXPECT_EQ(j["fields"]["l2.size"]["value"], nlohmann::json::parse(run({"hw", "show", "h200", "--format", "json"}).out)["fields"]["l2.size"]["value"]);
  // Bad input: exit status 2 and a message naming what is wrong.
  const Result no_hw = run({"hw", "fit-host", sweep.string()});
  EXPECT_EQ(no_hw.status, 2);
  EXPECT_NE(no_hw.err.find("--hw"), std::string::npos) << no_hw.err;
  const auto not_a_sweep = dir.write("ops.json", "{\"ops\": []}");
  const Result bad = run({"hw", "fit-host", not_a_sweep.string(), "--hw", "h100"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("layers"), std::string::npos) << bad.err;
}

TEST(Cli, HwShowYamlLoadsBackAsTheSameSpec) {
  TempDir dir;
  const Result yaml = run({"hw", "show", "rtx5090", "--format", "yaml", "--set", "hw.sm_count=80"});
  ASSERT_EQ(yaml.status, 0) << yaml.err;
  const auto file = dir.write("resolved.yaml", yaml.out);
  const Result again = run({"hw", "show", file.string(), "--format", "json"});
  const Result original =
      run({"hw", "show", "rtx5090", "--format", "json", "--set", "hw.sm_count=80"});
  ASSERT_EQ(again.status, 0) << again.err;
  const auto a = nlohmann::json::parse(again.out), b = nlohmann::json::parse(original.out);
  for (const auto& [key, field] : b["fields"].items()) {
    EXPECT_EQ(a["fields"][key]["value"], field["value"]) << key;
  }
  EXPECT_EQ(a["fields"]["sm_count"]["value"], "80");
  EXPECT_EQ(b["fields"]["sm_count"]["file"], "command line");
}

TEST(Cli, OccupancyPrintsLimitsAndBindingResource) {
  const Result r = run({"occupancy", "--hw", "h100", "--threads", "128", "--regs", "34"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "resident CTAs per SM:   12")) << r.out;
  EXPECT_TRUE(contains(r.out, "resident warps per SM:  48 of 64")) << r.out;
  EXPECT_TRUE(contains(r.out, "75.00%")) << r.out;
  EXPECT_TRUE(contains(r.out, "limited by:             registers")) << r.out;

  const Result j = run({"occupancy", "--hw", "h100", "--threads", "384", "--regs", "168",
                        "--format", "json"});
  ASSERT_EQ(j.status, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["ctas_per_sm"], 1);
  EXPECT_DOUBLE_EQ(doc["theoretical_occupancy"].get<double>(), 0.1875);

  const Result smem = run({"occupancy", "--hw", "h100", "--threads", "256", "--smem", "100KiB",
                           "--format", "json"});
  ASSERT_EQ(smem.status, 0) << smem.err;
  EXPECT_EQ(nlohmann::json::parse(smem.out)["limited_by"][0], "shared memory");
}

TEST(Cli, OccupancyBadInputNamesTheOption) {
  const Result big = run({"occupancy", "--hw", "h100", "--threads", "4096"});
  EXPECT_EQ(big.status, 2);
  EXPECT_TRUE(contains(big.err, "--threads")) << big.err;
  const Result regs = run({"occupancy", "--hw", "h100", "--threads", "128", "--regs", "300"});
  EXPECT_EQ(regs.status, 2);
  EXPECT_TRUE(contains(regs.err, "--regs")) << regs.err;
  const Result smem = run({"occupancy", "--hw", "h100", "--threads", "128", "--smem", "300KiB"});
  EXPECT_EQ(smem.status, 2);
  EXPECT_TRUE(contains(smem.err, "--smem")) << smem.err;
  const Result unit = run({"occupancy", "--hw", "h100", "--threads", "128", "--smem", "4GHz"});
  EXPECT_EQ(unit.status, 2);
  const Result missing = run({"occupancy", "--hw", "h100"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_TRUE(contains(missing.err, "--threads")) << missing.err;
  const Result nothw = run({"occupancy", "--hw", "h900", "--threads", "128"});
  EXPECT_EQ(nothw.status, 2);
  EXPECT_TRUE(contains(nothw.err, "unknown hardware 'h900'")) << nothw.err;
}

TEST(Cli, BadHardwareFileExitsTwoWithFileLineAndKey) {
  TempDir dir;
  const auto file = dir.write("bad.yaml", "base: h100\nsm_count: 0\n");
  const Result r = run({"hw", "show", file.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, file.string() + ":2: sm_count:")) << r.err;
}

TEST(Cli, SetOverridesNeedATargetPrefix) {
  const Result r = run({"hw", "show", "h100", "--set", "l2.size=1MiB"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "hw. or workload.")) << r.err;
}

// The real executable: exit status and stderr as a shell sees them.
TEST(CliProcess, ExitStatusTwoOnBadInputAndZeroOnSuccess) {
  auto status_of = [](const std::string& cmd) {
    const int raw = std::system(cmd.c_str());
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  };
  const std::string bin = GPUSIM_BINARY;
  EXPECT_EQ(status_of(bin + " hw list > /dev/null"), 0);
  EXPECT_EQ(status_of(bin + " hw show h900 2> /dev/null"), 2);
  EXPECT_EQ(status_of(bin + " occupancy --hw h100 --threads 0 2> /dev/null"), 2);
}

}  // namespace
}  // namespace gpusim::cli
