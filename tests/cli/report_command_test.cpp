// `gpusim report`: the Markdown's sections and tables filled from simulation (memory with OOM,
// TTFT growing with the sequence, class shares adding up), op workloads, bad input, identical
// output across runs and thread counts, and the roofline image with and without matplotlib.
#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "src/markdown_report.h"
#include "src/roofline_plot.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim::cli {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::TempDir;
using Result = gpusim::testing::CliResult;

Result run(const std::vector<std::string>& args) {
  return gpusim::testing::run_gpusim(args);
}

std::string job(const std::string& name) {
  return (config_dir() / "workloads" / (name + ".yaml")).string();
}

using gpusim::testing::read_file;

// A small model keeps the grid fast: CS336 "small" (12 layers, d_model 768), bf16.
constexpr const char* kSmallDecode =
    "model: cs336-small\nphase: decode\nbatch: 4\nseq_len: 256\ndtype: bf16\n";

// The rows of the Markdown table that follows the line `caption`: cells split at '|', trimmed.
std::vector<std::vector<std::string>> table_after(const std::string& md,
                                                  const std::string& caption) {
  std::vector<std::vector<std::string>> rows;
  const auto at = md.find("\n" + caption + "\n");
  if (at == std::string::npos) return rows;
  std::istringstream in(md.substr(at + caption.size() + 2));
  std::string line;
  bool started = false;
  while (std::getline(in, line)) {
    if (line.empty() && !started) continue;
    if (line.empty() || line[0] != '|') break;
    started = true;
    if (line.find("---") != std::string::npos) continue;  // the alignment row
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream row(line.substr(1));
    while (std::getline(row, cell, '|')) {
      const auto b = cell.find_first_not_of(' ');
      const auto e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    rows.push_back(cells);
  }
  return rows;
}

double number(std::string s) {
  std::erase(s, ',');
  return std::stod(s);
}

bool matplotlib_available() {
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    const std::string command = std::string(python) + " -c 'import matplotlib' >/dev/null 2>&1";
    if (std::system(command.c_str()) == 0) return true;
  }
  return false;
}

// One Llama-3-8B report shared by the content tests: batches 1 and 128 at 256 and 8192 tokens
// (the corners of seed 000's grid), so it stays quick while 128 x 8192 is out of memory.
class ReportLlama : public ::testing::Test {
 protected:
  // TempDir names its folder after the running test, which a suite set-up does not have.
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("gpusim_ReportLlama_" + std::to_string(::getpid())));
    std::filesystem::remove_all(*dir_);
    result_ = new Result(run({"report", job("decode"), "--hw", "h100", "--batches", "1,128",
                              "--seq-lens", "256,8192", "--out", (*dir_ / "r").string()}));
    md_ = new std::string(read_file(*dir_ / "r" / "report.md"));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete md_;
    delete result_;
    delete dir_;
  }
  static const std::filesystem::path& out() { return *dir_; }
  static std::filesystem::path* dir_;
  static Result* result_;
  static std::string* md_;
};
std::filesystem::path* ReportLlama::dir_ = nullptr;
Result* ReportLlama::result_ = nullptr;
std::string* ReportLlama::md_ = nullptr;

TEST_F(ReportLlama, HasEverySectionAndNoPlaceholders) {
  ASSERT_EQ(result_->status, 0) << result_->err;
  const std::string& md = *md_;
  EXPECT_EQ(md.rfind("# llama3-8b inference on the h100-sxm5", 0), 0u);
  for (const char* heading :
       {"## Abstract", "## 1. Profiling environment", "## 2. Hardware profiling",
        "### 2.1 Peak memory", "### 2.2 Time to first token (TTFT)", "### 2.3 Decode throughput",
        "### 2.4 Kernel-level profiling", "## 3. Architectural bottlenecks",
        "### 3.1 Roofline analysis", "### 3.2 Identified bottlenecks",
        "### 3.3 Optimization hypotheses", "## 4. Reproduction"}) {
    EXPECT_NE(md.find(std::string("\n") + heading), std::string::npos) << heading;
  }
  for (const char* placeholder : {"XX", "REPLACE", "TODO", "nan", "inf "}) {
    EXPECT_EQ(md.find(placeholder), std::string::npos) << placeholder;
  }
  // Hardware from the spec, the version, and that the numbers are simulated.
  EXPECT_NE(md.find("132 SMs"), std::string::npos);
  EXPECT_NE(md.find("HBM3"), std::string::npos);
  EXPECT_NE(md.find(std::string("gpusim ") + GPUSIM_VERSION), std::string::npos);
  EXPECT_NE(md.find("simulated"), std::string::npos);
  EXPECT_NE(md.find("Hugging Face transformers 5.17"), std::string::npos);
  EXPECT_NE(md.find("gpusim report " + job("decode") + " --hw h100"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_regular_file(out() / "r" / "kernels.csv"));
}

TEST_F(ReportLlama, MemoryTableMarksOomWhereTheModelDoesNotFit) {
  const auto rows = table_after(*md_, "Peak memory (MiB), prefill, bf16");
  ASSERT_EQ(rows.size(), 3u);  // header, batch 1, batch 128
  EXPECT_EQ(rows[1][0], "1");
  EXPECT_EQ(rows[2][0], "128");
  // Batch 1 x 256: the 16 GB of weights and little else.
  const double small = number(rows[1][1]);
  EXPECT_GT(small, 15000);
  EXPECT_LT(small, 16500);
  EXPECT_EQ(rows[2][2], "OOM");  // 128 x 8192: a 137 GB KV cache alone
  // OOM cells are not simulated: the TTFT table marks them too.
  const auto ttft = table_after(*md_, "Time to first token (ms), bf16");
  ASSERT_EQ(ttft.size(), 3u);
  EXPECT_EQ(ttft[2][2], "OOM");
  EXPECT_NE(ttft[2][1], "OOM");
}

TEST_F(ReportLlama, TtftGrowsWithSequenceAndBatch) {
  const auto ttft = table_after(*md_, "Time to first token (ms), bf16");
  ASSERT_EQ(ttft.size(), 3u);
  const double b1_256 = number(ttft[1][1]), b1_8192 = number(ttft[1][2]),
               b128_256 = number(ttft[2][1]);
  EXPECT_GT(b1_256, 1);  // a forward pass of 8 B parameters takes milliseconds
  EXPECT_GT(b1_8192, 4 * b1_256);
  EXPECT_GT(b128_256, 4 * b1_256);
}

TEST_F(ReportLlama, DecodeThroughputIsBatchOverStepTime) {
  const auto rows = table_after(*md_, "Decode step, KV length 1024, bf16");
  ASSERT_EQ(rows.size(), 3u);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const double batch = number(rows[i][0]), tpot_ms = number(rows[i][2]),
                 tokens = number(rows[i][3]);
    EXPECT_NEAR(tokens, batch / (tpot_ms * 1e-3), 0.01 * tokens + 1) << rows[i][0];
  }
  EXPECT_GT(number(rows[2][3]), 20 * number(rows[1][3]));  // batching pays off in decode
}

TEST_F(ReportLlama, KernelMetricsAndClassSharesAddUp) {
  const auto metrics =
      table_after(*md_,
                  "Nsight Compute metrics (simulated): llama3-8b: one decode step at batch 16 "
                  "against a KV cache of 1024 tokens, BF16");
  ASSERT_EQ(metrics.size(), 4u);
  EXPECT_EQ(metrics[1][0], "SM occupancy");
  EXPECT_EQ(metrics[1][2], "64 warps/SM");
  EXPECT_EQ(metrics[2][2], "3.35 TB/s (datasheet)");
  EXPECT_EQ(metrics[3][2], "1.07 PFLOP/s (at 1980 MHz)");  // 4096 flop/clk x 132 SMs x 1.98 GHz
  const double dram_pct = number(metrics[2][3]);
  EXPECT_GT(dram_pct, 20);  // decode streams weights
  EXPECT_LT(dram_pct, 100);

  for (const char* caption : {"Kernel time by bound class", "Kernel time by op category"}) {
    const auto rows = table_after(*md_, caption);
    ASSERT_GT(rows.size(), 2u) << caption;
    double share = 0;
    for (std::size_t i = 1; i < rows.size(); ++i) share += number(rows[i][3]);
    EXPECT_NEAR(share, 100, 0.5) << caption;
  }
  const auto top = table_after(*md_, "Top 10 kernels by time (identical launches merged)");
  ASSERT_EQ(top.size(), 11u);
  for (std::size_t i = 1; i < top.size(); ++i) {
    const std::string& bound = top[i].back();
    EXPECT_TRUE(bound == "memory" || bound == "compute" || bound == "balanced" ||
                bound == "latency")
        << bound;
  }
}

TEST_F(ReportLlama, BottlenecksByRegime) {
  const auto rows = table_after(*md_, "Bottleneck classification by operating regime");
  ASSERT_EQ(rows.size(), 5u);  // header, short, long, decode, the workload as given
  EXPECT_NE(rows[1][0].find("Short seq"), std::string::npos);
  EXPECT_NE(rows[2][0].find("Long seq"), std::string::npos);
  EXPECT_NE(rows[3][0].find("Decode"), std::string::npos);
  const std::map<std::string, std::string> resource{{"MEMORY-BOUND", "DRAM bandwidth"},
                                                    {"COMPUTE-BOUND", "tensor cores"},
                                                    {"LATENCY-BOUND", "launch and memory latency"},
                                                    {"BALANCED", "neither: low use of both"}};
  for (std::size_t i = 1; i < rows.size(); ++i) {
    ASSERT_TRUE(resource.count(rows[i][1])) << rows[i][1];
    EXPECT_EQ(rows[i][2], resource.at(rows[i][1]));
    EXPECT_NE(rows[i][3].find("% of kernel time"), std::string::npos);
  }
  // A long prompt is tensor work; one decode step streams weights.
  EXPECT_EQ(rows[2][1], "COMPUTE-BOUND");
  EXPECT_EQ(rows[3][1], "MEMORY-BOUND");
}

TEST_F(ReportLlama, RooflineImageWhenMatplotlibIsThere) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3 with matplotlib is not installed";
  const auto png = out() / "r" / "roofline.png";
  ASSERT_TRUE(std::filesystem::is_regular_file(png));
  EXPECT_EQ(read_file(png).substr(1, 3), "PNG");
  EXPECT_NE(md_->find("![Roofline"), std::string::npos);
  EXPECT_NE(result_->out.find("roofline.png"), std::string::npos);
}

TEST(ReportCommand, IdenticalAcrossRunsAndThreadCounts) {
  TempDir dir;
  const auto w = dir.write("small.yaml", kSmallDecode);
  const auto out = (dir.path() / "r").string();
  const std::vector<std::string> args{"report", w.string(),   "--hw",     "h100",  "--batches",
                                      "1,8",    "--seq-lens", "256,1024", "--out", out};
  const Result a = run(args);
  ASSERT_EQ(a.status, 0) << a.err;
  const std::string md = read_file(dir.path() / "r" / "report.md");
  const std::string csv = read_file(dir.path() / "r" / "kernels.csv");
  {
    const tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
    const Result b = run(args);
    ASSERT_EQ(b.status, 0) << b.err;
  }
  EXPECT_EQ(read_file(dir.path() / "r" / "report.md"), md);
  EXPECT_EQ(read_file(dir.path() / "r" / "kernels.csv"), csv);
  // The small model's TTFT grows along each row.
  const auto ttft = table_after(md, "Time to first token (ms), bf16");
  ASSERT_EQ(ttft.size(), 3u);
  for (std::size_t r = 1; r < ttft.size(); ++r) EXPECT_GT(number(ttft[r][2]), number(ttft[r][1]));
}

TEST(ReportCommand, OpWorkloadHasKernelSectionsOnly) {
  TempDir dir;
  const Result r =
      run({"report", job("ops"), "--hw", "rtx5090", "--out", (dir.path() / "r").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string md = read_file(dir.path() / "r" / "report.md");
  EXPECT_NE(md.find("# projection-and-norm on the rtx5090"), std::string::npos);
  EXPECT_NE(md.find("need a model workload"), std::string::npos);
  EXPECT_EQ(md.find("### 2.1 Peak memory"), std::string::npos);
  EXPECT_EQ(md.find("### 2.2 Time to first token"), std::string::npos);
  for (const char* heading : {"### 2.4 Kernel-level profiling", "### 3.1 Roofline analysis",
                              "### 3.2 Identified bottlenecks", "### 3.3 Optimization hypotheses",
                              "## 4. Reproduction"}) {
    EXPECT_NE(md.find(heading), std::string::npos) << heading;
  }
  const auto regimes = table_after(md, "Bottleneck classification by operating regime");
  ASSERT_EQ(regimes.size(), 2u);
  EXPECT_EQ(regimes[1][0], "The workload as given");
}

TEST(ReportCommand, BadInputIsExit2AndWritesNothing) {
  TempDir dir;
  const auto out = dir.path() / "r";
  const Result bad_hw =
      run({"report", job("decode"), "--hw", "no-such-gpu", "--out", out.string()});
  EXPECT_EQ(bad_hw.status, 2);
  EXPECT_NE(bad_hw.err.find("--hw"), std::string::npos) << bad_hw.err;
  const Result bad_list =
      run({"report", job("decode"), "--hw", "h100", "--batches", "1,x", "--out", out.string()});
  EXPECT_EQ(bad_list.status, 2);
  EXPECT_NE(bad_list.err.find("--batches"), std::string::npos) << bad_list.err;
  const Result bad_key = run({"report", job("decode"), "--hw", "h100", "--set", "workload.batchh=2",
                              "--out", out.string()});
  EXPECT_EQ(bad_key.status, 2) << bad_key.err;
  const Result no_hw = run({"report", job("decode")});
  EXPECT_EQ(no_hw.status, 2);
  EXPECT_FALSE(std::filesystem::exists(out));
  const auto file = dir.write("not-a-folder", "x");
  const Result file_out = run({"report", job("ops"), "--hw", "h100", "--out", file.string()});
  EXPECT_EQ(file_out.status, 2);
  EXPECT_NE(file_out.err.find("--out"), std::string::npos);
}

// A training workload's report: the grid is training steps by model x sequence (seed 002's
// table), with the memory each out-of-memory shape would need.
TEST(ReportCommand, TrainingGridByModelMarksOomWithTheMemoryNeeded) {
  TempDir dir;
  const auto file = dir.write("train.yaml", "model: qwen2-1.5b\nphase: train\nbatch: 2\nseq_len: 128\ndtype: bf16\n");
  const Result r = run({"report", file.string(), "--hw", "h100", "--models", "qwen2-1.5b,llama3-70b",
                        "--seq-lens", "128,1024", "--out", (dir.path() / "r").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string md = read_file(dir.path() / "r" / "report.md");
  for (const char* heading : {"### 2.1 Peak memory of a training step", "### 2.2 Step time and throughput",
                              "### 2.3 GEMM share of kernel time", "### 2.4 Kernel-level profiling"}) {
    EXPECT_NE(md.find(std::string("\n") + heading), std::string::npos) << heading;
  }
  EXPECT_EQ(md.find("Time to first token"), std::string::npos);
  EXPECT_EQ(md.find("Decode step"), std::string::npos);
  const auto memory = table_after(md, "Peak memory (MiB), training step, bf16");
  ASSERT_EQ(memory.size(), 3u);  // header and two models
  EXPECT_EQ(memory[1][0], "qwen2-1.5b (2)");
  EXPECT_EQ(memory[2][0], "llama3-70b (2)");
  // Llama-3-70B: 140 GB of bf16 weights alone; the cell names what it would need.
  ASSERT_EQ(memory[2][1].rfind("OOM (", 0), 0u) << memory[2][1];
  EXPECT_GT(number(memory[2][1].substr(5)), 4 * 140e9 / 1048576.0);  // weights, gradients, AdamW's two moments
  // Qwen2-1.5B fits: weights, gradients and two moments (8 bytes a parameter) and activations.
  const double qwen = number(memory[1][1]);
  EXPECT_GT(qwen, 8 * 1.5e9 / 1048576.0);
  EXPECT_GT(number(memory[1][2]), qwen);  // longer sequences save more activations
  const auto steps = table_after(md, "Training step (ms), tokens/s, bf16");
  ASSERT_EQ(steps.size(), 3u);
  // "ms (tokens/s)": the throughput is the step's 2 x 128 tokens over its time.
  const std::string& cell = steps[1][1];
  const auto open = cell.find(" (");
  ASSERT_NE(open, std::string::npos) << cell;
  const double step_ms = number(cell.substr(0, open));
  const double rate = number(cell.substr(open + 2, cell.size() - open - 3));
  EXPECT_NEAR(rate, 2 * 128 / (step_ms * 1e-3), 0.01 * rate);
  EXPECT_EQ(steps[2][1], "OOM");
  const auto gemm = table_after(md, "GEMM share of kernel time (%), training step");
  ASSERT_EQ(gemm.size(), 3u);
  EXPECT_GT(number(gemm[1][1]), 5);
  EXPECT_LT(number(gemm[1][1]), 95);
  EXPECT_NE(md.find("--models qwen2-1.5b,llama3-70b"), std::string::npos);  // reproduction
  // --models is for training workloads, and rows by model take the workload's batch.
  const Result inference = run({"report", job("decode"), "--hw", "h100", "--models", "llama3-8b", "--out",
                                (dir.path() / "x").string()});
  EXPECT_EQ(inference.status, 2);
  EXPECT_NE(inference.err.find("--models"), std::string::npos) << inference.err;
  const Result with_batches = run({"report", file.string(), "--hw", "h100", "--models", "llama3-8b", "--batches",
                                   "4", "--out", (dir.path() / "x").string()});
  EXPECT_EQ(with_batches.status, 2);
  EXPECT_NE(with_batches.err.find("--batches"), std::string::npos) << with_batches.err;
  const Result unknown = run({"report", file.string(), "--hw", "h100", "--models", "llama9", "--out",
                              (dir.path() / "x").string()});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("llama9"), std::string::npos) << unknown.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "x"));
}

TEST(ReportCommand, HelpAndUsage) {
  const Result help = run({"report", "--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("gpusim report WORKLOAD.yaml --hw NAME|FILE"), std::string::npos);
  const Result usage = run({"--help"});
  EXPECT_NE(usage.out.find("report WORKLOAD.yaml"), std::string::npos);
  EXPECT_EQ(usage.out.find("Planned (see the issues): report"), std::string::npos);
}

TEST(ReportRoofline, WithoutPythonTheReasonIsOneLine) {
  TempDir dir;
  RooflineRequest r;
  r.config_dir = config_dir();
  r.csv = dir.write("kernels.csv", "arithmetic_intensity,flops_per_s,bound\n1,1e12,memory\n");
  r.png = dir.path() / "roofline.png";
  r.dram_bytes_per_s = 3e12;
  r.fp32_flops_per_s = 6e13;
  r.pythons = {"/nonexistent/python3", "no-such-python-interpreter"};
  const PlotResult p = draw_roofline(r);
  EXPECT_FALSE(p.drawn);
  EXPECT_NE(p.reason.find("matplotlib"), std::string::npos) << p.reason;
  EXPECT_EQ(p.reason.find('\n'), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(r.png));
}

TEST(ReportMarkdown, SaysWhyTheImageIsMissing) {
  const hw::PresetCatalog catalog(config_dir() / "hw");
  ReportData d;
  d.hw = hw::load_hardware("h100", catalog, {});
  d.mode = "graph";
  d.workload_name = "tiny";
  d.workload_text = "workload tiny: 1 op\n";
  d.run.kernels = 1;
  d.run.kernel_time_us = d.run.total_us = 10;
  d.run.bounds.push_back({"memory", 1, 10, 100, 2e7, 1e6, 0});
  d.run.by_bound.push_back({"memory", 1, 10, 100, 10, 1, 60, 0.5, 0});
  d.roofline = {false, "python3 with matplotlib was not found", 3e12, 8e14, 6e13};
  const std::string md = render_markdown(d);
  EXPECT_NE(md.find("The roofline image was not drawn: python3 with matplotlib was not found."),
            std::string::npos);
  EXPECT_EQ(md.find("roofline.png"), std::string::npos);
  // 2e7 bytes in 10 us is 2 TB/s: 59.7% of the H100's 3.35 TB/s.
  EXPECT_NE(md.find("their DRAM throughput averages 59.7% of the 3.35 TB/s peak"),
            std::string::npos);
  EXPECT_EQ(render_markdown(d), md);
}

}  // namespace
}  // namespace gpusim::cli
