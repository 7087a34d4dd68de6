// The seed suites: the reported figures of the source documents (validation/data/seed*.csv) and
// their comparison with gpusim's simulation (validation/seed_suites.h, `gpusim validate`).
#include "validation/seed_suites.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include <algorithm>
#include <fmt/format.h>
#include <variant>

#include "hw/hardware_loader.h"
#include "hw/kernel_metrics.h"
#include "tests/support/cli_runner.h"
#include "validation/csv.h"
#include "workloads/model_run.h"
#include "workloads/workload.h"

namespace gpusim::validation {
namespace {

using gpusim::testing::config_dir;
using gpusim::testing::repo_dir;

std::filesystem::path data_dir() { return repo_dir() / "validation" / "data"; }

hw::HardwareSpec preset(const std::string& name) {
  return hw::load_hardware(name, hw::PresetCatalog(config_dir() / "hw"));
}

// The seed file each CSV transcribes.
const std::map<std::string, std::string>& seed_files() {
  static const std::map<std::string, std::string> kFiles{
      {"seed001_sdpa_h100.csv", "001_3c4a475d18499d09.txt"},
      {"seed002_forward_rtx5090.csv", "002_2d420b160316618b.txt"},
      {"seed002_attention_a800.csv", "002_2d420b160316618b.txt"},
      {"seed002_gemm_share_rtx5090.csv", "002_2d420b160316618b.txt"},
      {"seed003_deepseek_ocr_rtx5090.csv", "003_ab1b402fdc356e1e.txt"}};
  return kFiles;
}

int compared_rows(const std::string& file) {
  const CsvTable t = CsvTable::read(data_dir() / file);
  int n = 0;
  for (std::size_t row = 0; row < t.rows(); ++row) n += t.at(row, "compare") != "none" ? 1 : 0;
  return n;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void expect_positive_and_finite(const std::vector<Comparison>& rows) {
  for (const auto& r : rows) {
    EXPECT_TRUE(std::isfinite(r.simulated_us)) << r.reference.label;
    EXPECT_TRUE(std::isfinite(r.error_pct)) << r.reference.label;
    EXPECT_TRUE(r.reference.held_out) << r.reference.label;
    EXPECT_FALSE(r.simulated_kernels.empty()) << r.reference.label;
  }
}

TEST(SeedData, EveryRowParsesAndNamesItsSource) {
  for (const auto& [file, seed] : seed_files()) {
    SCOPED_TRACE(file);
    const CsvTable t = CsvTable::read(data_dir() / file);
    ASSERT_GT(t.rows(), 0u);
    std::set<std::string> ids;
    for (std::size_t row = 0; row < t.rows(); ++row) {
      SCOPED_TRACE(t.at(row, "id"));
      EXPECT_TRUE(ids.insert(t.at(row, "id")).second) << "duplicate id";
      EXPECT_TRUE(t.at(row, "source").starts_with(seed)) << t.at(row, "source");
      EXPECT_NE(t.at(row, "source").find("line"), std::string::npos) << "no line in the source";
      EXPECT_FALSE(t.at(row, "assumption").empty());
      const std::string how = t.at(row, "compare");
      EXPECT_TRUE(how == "none" || how == "time" || how == "fits" || how == "share" ||
                  how == "count" || how == "occupancy")
          << how;
      if (how == "time" || how == "share" || how == "count" || how == "occupancy") {
        const std::string column = file.starts_with("seed002_forward") ? "avg_step" : "value";
        EXPECT_GT(t.number(row, column), 0);
      }
    }
  }
}

TEST(SeedData, FiguresAsTheSeedsPrintThem) {
  const CsvTable s1 = CsvTable::read(data_dir() / "seed001_sdpa_h100.csv");
  std::map<std::string, std::string> per_head;
  for (std::size_t row = 0; row < s1.rows(); ++row) {
    if (s1.at(row, "metric") == "per_head_latency") per_head[s1.at(row, "heads")] = s1.at(row, "value");
  }
  EXPECT_EQ(per_head, (std::map<std::string, std::string>{{"8", "4.559"}, {"16", "4.354"}, {"32", "4.097"},
                                                          {"64", "3.903"}, {"96", "3.820"}, {"128", "3.921"}}));

  const CsvTable fwd = CsvTable::read(data_dir() / "seed002_forward_rtx5090.csv");
  int timed = 0, oom = 0;
  for (std::size_t row = 0; row < fwd.rows(); ++row) {
    const std::string id = fwd.at(row, "id");
    if (id == "2.7B_s128_w5_fwd") {
      EXPECT_EQ(fwd.at(row, "avg_step"), "0.0838");
    } else if (id == "small_s1024_w5_fwd+bwd") {
      EXPECT_EQ(fwd.at(row, "avg_step"), "0.1583");
    } else if (id == "medium_s1024_w5_fwd") {
      EXPECT_EQ(fwd.at(row, "status"), "OOM");
    }
    timed += fwd.at(row, "compare") == "time" ? 1 : 0;
    oom += fwd.at(row, "compare") == "fits" ? 1 : 0;
  }
  // 5 models x 4 lengths at warm-up 5: forward 11 ran and 9 ran out of memory, forward+backward
  // 9 and 11.
  EXPECT_EQ(timed, 20);
  EXPECT_EQ(oom, 20);

  const CsvTable att = CsvTable::read(data_dir() / "seed002_attention_a800.csv");
  std::map<std::string, std::string> values;
  for (std::size_t row = 0; row < att.rows(); ++row) values[att.at(row, "id")] = att.at(row, "value");
  EXPECT_EQ(values["forward_time_s8192_d16"], "26.4");  // printed "26. 4" in the seed
  EXPECT_EQ(values["forward_time_s16384_d128"], "132.1");
  EXPECT_EQ(values["backward_time_s16384_d128"], "317.1");
  EXPECT_EQ(values["forward_memory_before_backward_s16384_d16"], "24897.3");

  const CsvTable gemm = CsvTable::read(data_dir() / "seed002_gemm_share_rtx5090.csv");
  std::map<std::string, std::string> shares;
  int compared = 0;
  for (std::size_t row = 0; row < gemm.rows(); ++row) {
    shares[gemm.at(row, "id")] = gemm.at(row, "value");
    compared += gemm.at(row, "compare") == "share" ? 1 : 0;
  }
  EXPECT_EQ(shares["small_s128_inference"], "88.0");
  EXPECT_EQ(shares["small_s1024_training"], "31.0");
  EXPECT_EQ(shares["2.7B_s128_inference"], "94.4");
  EXPECT_EQ(shares["xl_s128_training"], "");  // OOM
  EXPECT_EQ(compared, 20);

  const CsvTable s3 = CsvTable::read(data_dir() / "seed003_deepseek_ocr_rtx5090.csv");
  std::map<std::string, std::string> s3values;
  double top20 = 0;
  for (std::size_t row = 0; row < s3.rows(); ++row) {
    s3values[s3.at(row, "id")] = s3.at(row, "value");
    if (s3.at(row, "kind") == "kernel_share") top20 += s3.number(row, "value");
  }
  EXPECT_NEAR(top20, 90.0, 1e-9);  // the top 20 kernels hold 90.0% of the decode kernel time
  EXPECT_EQ(s3values["category_gemv"], "49.2");
  EXPECT_EQ(s3values["category_elementwise"], "21.7");
  EXPECT_EQ(s3values["category_flash_attention"], "3.8");
  EXPECT_EQ(s3values["category_memory_ops"], "8.7");
  EXPECT_EQ(s3values["count_memory_bound"], "9");
  EXPECT_EQ(s3values["count_balanced"], "7");
  EXPECT_EQ(s3values["count_compute_bound"], "4");
  EXPECT_EQ(s3values["mean_achieved_occupancy"], "39.51");
}

TEST(SeedSuites, Seed001ComparesPerHeadWithTheSeedAndOurMeasurement) {
  const auto rows = compare_seed001(data_dir(), preset("h100"), models::default_kernel_models());
  // The seed's 7 figures (6 per-head, the H=96 total), then the 6 per-head shapes measured here.
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(compared_rows("seed001_sdpa_h100.csv") + 6));
  expect_positive_and_finite(rows);
  std::map<std::string, std::vector<const Comparison*>> by_family;
  for (const auto& r : rows) by_family[r.reference.family].push_back(&r);
  ASSERT_EQ(by_family["seed001-reported"].size(), 7u);
  ASSERT_EQ(by_family["seed001-own-measurement"].size(), 6u);
  const auto& own = by_family["seed001-own-measurement"];
  // ops_h100.csv: sdpa fp16 B=16 H=8 S=512 D=64, op kernel time 27.761 us (median of 20).
  EXPECT_NEAR(own.front()->reference.measured_us, 27.761 / 8, 1e-9);
  EXPECT_NE(own.front()->reference.label.find("H=8 "), std::string::npos);
  EXPECT_NE(own.back()->reference.label.find("H=128 "), std::string::npos);
  // The same simulation for both sets; the fixed costs make a small H dearer per head.
  const auto& reported = by_family["seed001-reported"];
  for (std::size_t i = 0; i < own.size(); ++i) {
    EXPECT_GT(own[i]->simulated_us, 0);
    EXPECT_DOUBLE_EQ(own[i]->simulated_us, reported[i]->simulated_us);
  }
  EXPECT_GT(own.front()->simulated_us, own.back()->simulated_us);
  // The total at H=96 is 96 times its per-head value.
  EXPECT_NEAR(reported[6]->simulated_us, 96 * reported[4]->simulated_us, 1e-6);
}

TEST(SeedSuites, Seed002ForwardStepsTrainingStepsAndOutOfMemoryRows) {
  const auto csv = data_dir() / "seed002_forward_rtx5090.csv";
  const auto rows = compare_seed002_forward(csv, config_dir() / "models", preset("rtx5090"),
                                            models::default_kernel_models());
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(compared_rows("seed002_forward_rtx5090.csv")));
  std::map<std::string, double> step_us;  // label's shape and pass -> simulated
  int timed = 0, trained = 0, oom = 0, agree = 0;
  for (const auto& r : rows) {
    const std::string& label = r.reference.label;
    if (r.reference.family == "seed002-forward" || r.reference.family == "seed002-train") {
      (r.reference.family == "seed002-train" ? trained : timed) += 1;
      EXPECT_GT(r.simulated_us, 1000) << label;  // a whole step, in us
      EXPECT_TRUE(std::isfinite(r.simulated_us));
      EXPECT_FALSE(r.simulated_kernels.empty());
      step_us[label.substr(0, label.find(" step"))] = r.simulated_us;
    } else {
      ASSERT_EQ(r.reference.family, "seed002-oom");
      ++oom;
      EXPECT_EQ(r.reference.measured_us, 1);  // every compared status is an OOM
      EXPECT_TRUE(r.simulated_us == 0 || r.simulated_us == 1);
      EXPECT_EQ(r.error_pct, r.simulated_us == 1 ? 0.0 : 100.0);
      agree += r.simulated_us == 1 ? 1 : 0;
      // A forward with autograd keeps its saved activations: the same peak as its training step.
      EXPECT_TRUE(contains(label, "fwd+bwd OOM=1") || contains(label, "with autograd's saved activations")) << label;
    }
  }
  EXPECT_EQ(timed, 11);
  EXPECT_EQ(trained, 9);
  EXPECT_EQ(oom, 20);
  // The largest configurations cannot hold their saved activations in 32 GiB.
  EXPECT_GE(agree, 10);
  // A backward costs more than its forward; larger sequences take longer.
  const std::string small = "cs336-small b4 s128 fp32 naive: ";
  ASSERT_TRUE(step_us.count(small + "fwd") && step_us.count(small + "fwd+bwd"));
  EXPECT_GT(step_us[small + "fwd+bwd"], 2 * step_us[small + "fwd"]);
  EXPECT_LT(step_us[small + "fwd+bwd"], step_us["cs336-small b4 s1024 fp32 naive: fwd+bwd"]);
}

TEST(SeedSuites, Seed002AttentionForwardAndBackwardOnTheA100Preset) {
  const auto rows = compare_seed002_attention(data_dir() / "seed002_attention_a800.csv", preset("a100"),
                                              models::default_kernel_models());
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(compared_rows("seed002_attention_a800.csv")));
  ASSERT_EQ(rows.size(), 41u);  // 5 lengths x 4 head dims forward and backward, and the seq 32768 estimate
  std::map<std::pair<int, int>, double> fwd, bwd;  // (S, D) -> simulated
  for (const auto& r : rows) {
    if (r.reference.family == "seed002-oom") {
      // 3 x 8 x 32768^2 x 4 bytes = 103 GB do not fit 80 GB: the seed's estimate holds.
      EXPECT_EQ(r.simulated_us, 1);
      EXPECT_EQ(r.error_pct, 0);
      continue;
    }
    const bool backward = r.reference.family == "seed002-attention-backward";
    if (!backward) {
      EXPECT_EQ(r.reference.family, "seed002-attention");
    }
    EXPECT_GT(r.simulated_us, 0);
    EXPECT_TRUE(std::isfinite(r.simulated_us));
    int S = 0, D = 0;
    ASSERT_EQ(std::sscanf(r.reference.label.c_str(), "naive_attention fp32 B=8 H=1 S=%d D=%d", &S, &D), 2)
        << r.reference.label;
    (backward ? bwd : fwd)[{S, D}] = r.simulated_us;
  }
  ASSERT_EQ(fwd.size(), 20u);
  ASSERT_EQ(bwd.size(), 20u);
  for (const int d : {16, 32, 64, 128}) {
    auto at = [&](int s) { return fwd.at(std::make_pair(s, d)); };
    EXPECT_LT(at(256), at(1024));
    EXPECT_LT(at(1024), at(4096));
    EXPECT_LT(at(4096), at(8192));
    // O(S^2): four times the scores for twice the length, give or take the launch costs.
    EXPECT_GT(at(16384), 3 * at(8192));
    // The written-out softmax's backward makes several passes over the scores for each of the
    // forward's (the seed: 2.4-2.8x at 8192 and 16384).
    const double ratio = bwd.at({16384, d}) / at(16384);
    EXPECT_GT(ratio, 2.0) << d;
    EXPECT_LT(ratio, 3.5) << d;
  }
}

TEST(SeedSuites, Seed002GemmShareOfInferenceAndTraining) {
  const auto rows = compare_seed002_gemm_share(data_dir() / "seed002_gemm_share_rtx5090.csv", config_dir() / "models",
                                               preset("rtx5090"), models::default_kernel_models());
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(compared_rows("seed002_gemm_share_rtx5090.csv")));
  expect_positive_and_finite(rows);
  std::map<std::string, double> inference, training;  // "model seq" -> share
  for (const auto& r : rows) {
    EXPECT_EQ(r.reference.family, "seed002-gemm-share");
    EXPECT_GT(r.simulated_us, 20) << r.reference.label;
    EXPECT_LT(r.simulated_us, 100) << r.reference.label;
    const std::string& l = r.reference.label;
    const std::string shape = l.substr(0, l.find(" fp32"));
    (contains(l, "forward+backward") ? training : inference)[shape] = r.simulated_us;
  }
  ASSERT_EQ(training.size(), 9u);
  // The backward's non-GEMM kernels lower the share, as the seed finds.
  for (const auto& [shape, share] : training) EXPECT_LT(share, inference.at(shape)) << shape;
  // Longer sequences: more non-GEMM work (the S x S softmax) per GEMM FLOP.
  EXPECT_GT(inference.at("cs336-small b4 s128"), inference.at("cs336-small b4 s1024"));
}

TEST(SeedSuites, Seed003SharesClassesAndOccupancy) {
  const auto rows = compare_seed003(data_dir() / "seed003_deepseek_ocr_rtx5090.csv",
                                    config_dir() / "workloads" / "deepseek-ocr-decode.yaml",
                                    config_dir() / "models", preset("rtx5090"),
                                    models::default_kernel_models());
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(compared_rows("seed003_deepseek_ocr_rtx5090.csv")));
  expect_positive_and_finite(rows);
  double shares = 0, count = 0;
  for (const auto& r : rows) {
    if (r.reference.family == "seed003-shares") {
      EXPECT_GT(r.simulated_us, 0) << r.reference.label;  // every category occurs in decode
      EXPECT_LT(r.simulated_us, 100) << r.reference.label;
      shares += r.simulated_us;
    } else if (r.reference.family == "seed003-classes") {
      count += r.simulated_us;
    } else {
      ASSERT_EQ(r.reference.family, "seed003-occupancy");
      EXPECT_GT(r.simulated_us, 0);
      EXPECT_LE(r.simulated_us, 100);
    }
  }
  EXPECT_LE(shares, 100 + 1e-9);
  EXPECT_GT(shares, 50);  // the categories cover most of the step
  EXPECT_EQ(count, 20);   // each of the top 20 kernel names in exactly one class
  // GEMV and GEMM kernels are the largest share, as in the seed.
  EXPECT_NE(rows.front().reference.label.find("GEMV"), std::string::npos);
  for (std::size_t i = 1; i < 5; ++i) EXPECT_GT(rows.front().simulated_us, rows[i].simulated_us);
}

// The count rows apply the seed's own rule (hw::classify_seed003) to the 20 costliest kernel
// names, each in the class holding most of its time; the label gives gpusim's own counts.
TEST(SeedSuites, Seed003CountRowsUseTheSeedsRule) {
  const hw::HardwareSpec rtx5090 = preset("rtx5090");
  const auto models = models::default_kernel_models();
  const auto workload = config_dir() / "workloads" / "deepseek-ocr-decode.yaml";
  const auto rows = compare_seed003(data_dir() / "seed003_deepseek_ocr_rtx5090.csv", workload,
                                    config_dir() / "models", rtx5090, models);

  // The same step, classified here.
  const auto parsed = workloads::load_workload(workload, {}, config_dir() / "models");
  const auto run = workloads::simulate_model(std::get<workloads::ModelWorkload>(parsed), rtx5090,
                                             hw::LaunchMode::kGraph, models);
  const auto& detail = *run.steps.front().detail;
  std::map<std::string, double> time;
  std::map<std::string, std::map<std::string, double>> seed_us, own_us;
  for (std::size_t i = 0; i < detail.result.kernels.size(); ++i) {
    const auto& k = detail.result.kernels[i];
    if (k.name.starts_with("Memcpy") || k.name.starts_with("Memset")) continue;
    const hw::KernelMetrics m = hw::kernel_metrics(rtx5090, detail.nodes[i].launch, k);
    time[k.name] += k.duration().us();
    seed_us[k.name][std::string(hw::name(hw::classify_seed003(m)))] += k.duration().us();
    own_us[k.name][std::string(hw::name(m.bound))] += k.duration().us();
  }
  std::vector<std::pair<double, std::string>> names;
  for (const auto& [name, us] : time) names.emplace_back(us, name);
  std::stable_sort(names.begin(), names.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  names.resize(20);
  const auto top = [](const std::map<std::string, double>& us) {
    const auto less = [](const auto& a, const auto& b) { return a.second < b.second; };
    return std::max_element(us.begin(), us.end(), less)->first;
  };
  std::map<std::string, int> seed_count, own_count;
  for (const auto& [us, name] : names) {
    ++seed_count[top(seed_us[name])];
    ++own_count[top(own_us[name])];
  }
  // gpusim's rule, latency counted as balanced, gives other counts: the rows tell the rules apart.
  EXPECT_NE(seed_count["memory"], own_count["memory"]);

  int compared = 0;
  for (const auto& r : rows) {
    if (r.reference.family != "seed003-classes") continue;
    const std::string& label = r.reference.label;
    SCOPED_TRACE(label);
    ++compared;
    EXPECT_NE(label.find("seed's rule"), std::string::npos);
    if (label.starts_with("memory-bound")) {
      EXPECT_EQ(r.simulated_us, seed_count["memory"]);
      EXPECT_NE(label.find(fmt::format("gpusim's rule: {})", own_count["memory"])),
                std::string::npos);
    } else if (label.starts_with("compute-bound")) {
      EXPECT_EQ(r.simulated_us, seed_count["compute"]);
      EXPECT_NE(label.find(fmt::format("gpusim's rule: {})", own_count["compute"])),
                std::string::npos);
    } else {
      ASSERT_TRUE(label.starts_with("balanced"));
      EXPECT_EQ(r.simulated_us, seed_count["balanced"]);
      EXPECT_NE(label.find(fmt::format("gpusim's rule: balanced {}, latency {})",
                                       own_count["balanced"], own_count["latency"])),
                std::string::npos);
    }
    // gpusim's own counts stay out of the error: it compares the seed's-rule count only.
    EXPECT_DOUBLE_EQ(r.error_pct,
                     100.0 * (r.simulated_us - r.reference.measured_us) / r.reference.measured_us);
  }
  EXPECT_EQ(compared, 3);
}

TEST(SeedSuites, Seed003KernelCategories) {
  EXPECT_EQ(seed003_category("internal::gemvx::kernel<bf16>"), "gemv");
  EXPECT_EQ(seed003_category("void cutlass::Kernel2<cutlass::gemm::kernel::GemmGrouped<sm80 128x128x32, 3 stages> >"), "gemv");
  EXPECT_EQ(seed003_category("void at::cuda::detail::prepare_grouped_gemm_data<cutlass::bfloat16_t>"), "other");
  EXPECT_EQ(seed003_category("void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false>, 4, 4, true>"),
            "flash_attention");
  EXPECT_EQ(seed003_category("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)>"),
            "memory_ops");
  EXPECT_EQ(seed003_category("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)>"),
            "memory_ops");
  EXPECT_EQ(seed003_category("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>"),
            "cat");
  EXPECT_EQ(seed003_category("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >"),
            "elementwise");
  EXPECT_EQ(seed003_category("void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_put_kernel_impl> >"),
            "other");
  EXPECT_EQ(seed003_category("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>> >"),
            "other");
}

TEST(SeedSuites, ValidatePrintsTheSeedSuitesWithoutThresholds) {
  gpusim::testing::TempDir dir;
  const auto doc = dir.path() / "validation.md";
  const auto r = gpusim::testing::run_gpusim(
      {"validate", "--suite", "seed001", "--suite", "seed002", "--suite", "seed003", "--doc", doc.string()});
  EXPECT_EQ(r.status, 0) << r.err;  // no thresholds recorded for the seed suites yet
  for (const char* line : {"== seed001 on h100-sxm5", "== seed002 on rtx5090", "== seed003 on rtx5090",
                           "seed001: MAPE", "seed002: MAPE", "seed003: MAPE", "reported figures not simulated"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(r.out.find("measured-h100"), std::string::npos);  // only the suites asked for
  ASSERT_TRUE(std::filesystem::exists(doc));
}

TEST(SeedSuites, SomeSuitesWithoutDocLeaveTheValidationReportAlone) {
  const auto report = gpusim::testing::repo_dir() / "docs" / "validation.md";
  const auto before = std::filesystem::last_write_time(report);
  const auto r = gpusim::testing::run_gpusim({"validate", "--suite", "seed001"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("docs/validation.md left as it is"), std::string::npos) << r.out;
  EXPECT_EQ(std::filesystem::last_write_time(report), before);
}

}  // namespace
}  // namespace gpusim::validation
