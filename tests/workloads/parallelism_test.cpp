// Several GPUs (issue 19): system files, the collective model's choices, tensor, expert and data
// parallelism through `gpusim run`, per-GPU memory, and bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hw/gpu_engine.h"
#include "hw/hardware_loader.h"
#include "models/collective_model.h"
#include "sim/error.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"

namespace gpusim {
namespace {

using testing::config_dir;
using testing::run_gpusim;
using testing::run_json;

hw::PresetCatalog catalog() { return hw::PresetCatalog(std::vector{config_dir() / "hw", config_dir() / "systems"}); }

std::filesystem::path write(const std::string& name, const std::string& text) {
  const auto p = gpusim::testing::test_temp_path(name);
  std::ofstream(p) << text;
  return p;
}

double kernel_time(const nlohmann::json& j, const std::string& family) {
  double t = 0;
  for (const auto& k : j["kernels"]) {
    if (k["category"] == family || k["name"].get<std::string>().find(family) != std::string::npos) t += k["duration_us"].get<double>();
  }
  return t;
}

TEST(SystemFiles, PresetsLoadAsSystemsAndChipsStayOne) {
  const auto dgx = hw::load_hardware("dgx-h100", catalog());
  EXPECT_EQ(dgx.system.gpus, 8);
  EXPECT_EQ(dgx.system.interconnect.kind, "nvswitch");
  EXPECT_EQ(dgx.sm_count, 132);  // the chip, through base:
  const auto h100 = hw::load_hardware("h100", catalog());
  EXPECT_TRUE(h100.system.single());
  const auto pcie = hw::load_hardware("rtx5090-x4-pcie", catalog());
  EXPECT_EQ(pcie.system.gpus, 4);
  EXPECT_NEAR(pcie.system.interconnect.bandwidth, 63.0e9, 0.1e9);  // PCIe 5.0 x16 from generation and lanes
}

TEST(SystemFiles, BadSystemsNameTheKey) {
  const auto no_links = write("nolinks.yaml", "base: h100-sxm5\nsystem:\n  gpus: 4\n");
  try {
    hw::load_hardware(no_links.string(), catalog());
    FAIL() << "a 4-GPU node without an interconnect loaded";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "system.interconnect.kind");
  }
  const auto bad_pairs = write("badpairs.yaml",
                               "base: dgx-h100\nsystem:\n  gpus: 4\n  interconnect:\n    kind: nvlink\n    pairs: 0-1,1-7\n");
  try {
    hw::load_hardware(bad_pairs.string(), catalog());
    FAIL() << "a pair naming GPU 7 of 4 loaded";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "system.interconnect.pairs");
    EXPECT_EQ(e.line(), 6);
  }
  // An override reaches the system like any key.
  const hw::HardwareOverride faster{"system.interconnect.bandwidth", "900GB/s"};
  EXPECT_DOUBLE_EQ(hw::load_hardware("dgx-h100", catalog(), {&faster, 1}).system.interconnect.bandwidth, 900e9);
}

TEST(CollectiveModel, ProtocolByMessageSizeAndBytesByAlgorithm) {
  const auto dgx = hw::load_hardware("dgx-h100", catalog());
  const models::CollectiveProblem small{models::Collective::kAllReduce, 16384, 4, 4, hw::DType::kBf16};
  const models::CollectiveProblem large{models::Collective::kAllReduce, 1 << 30, 4, 4, hw::DType::kBf16};
  const auto s = models::plan_collective(small, dgx), l = models::plan_collective(large, dgx);
  EXPECT_EQ(s.protocol, models::Protocol::kLL);  // latency-bound: the low-latency protocol
  EXPECT_EQ(l.protocol, models::Protocol::kSimple);
  EXPECT_EQ(l.algorithm, models::CollectiveAlgorithm::kRing);
  EXPECT_EQ(l.steps, 6);                                 // 2(n-1)
  EXPECT_DOUBLE_EQ(l.payload_bytes, 1.5 * (1 << 30));    // 2(n-1)/n of the buffer
  EXPECT_EQ(l.channels, dgx.system.interconnect.channels);
  EXPECT_EQ(s.channels, 1);  // NCCL's LL thread threshold: 16 KiB over 4 ranks fills one channel
  // NVLS, when on, sends each GPU's buffer once.
  auto nvls = dgx;
  nvls.system.interconnect.nvls = "on";
  const auto n = models::plan_collective({models::Collective::kAllReduce, 1 << 30, 8, 8, hw::DType::kBf16}, nvls);
  EXPECT_EQ(n.algorithm, models::CollectiveAlgorithm::kNvls);
  EXPECT_DOUBLE_EQ(n.payload_bytes, 1 << 30);
}

TEST(CollectiveModel, EngineTimeFollowsTheLinkAndSharesIt) {
  auto dgx = hw::load_hardware("dgx-h100", catalog());
  const models::CollectiveProblem p{models::Collective::kAllGather, 256.0 * (1 << 20), 8, 8, hw::DType::kBf16};
  auto run = [&](const hw::HardwareSpec& spec, int copies) {
    std::vector<hw::KernelNode> nodes;
    for (int i = 0; i < copies; ++i) {
      nodes.push_back({models::lower_collective(p, spec, {"in" + std::to_string(i), 1}, {"out" + std::to_string(i), 1}),
                       "ag", i, {}, std::nullopt});
    }
    const auto r = hw::run_engine(spec, hw::LaunchMode::kGraph, nodes);
    return r.end.seconds();
  };
  const double one = run(dgx, 1);
  const double plan = models::plan_collective(p, dgx).estimated_seconds;
  EXPECT_NEAR(one, plan, 0.05 * plan);  // bandwidth-bound: the engine's time is the link's
  // Two at once on two streams share the GPU's links: about twice as long, not the same.
  EXPECT_GT(run(dgx, 2), 1.8 * one);
  // Twice the link bandwidth: about half the time (what-if through the mechanism).
  auto faster = dgx;
  faster.system.interconnect.bandwidth *= 2;
  EXPECT_LT(run(faster, 1), 0.6 * one);
  // A chip alone cannot send.
  EXPECT_THROW(models::plan_collective(p, hw::load_hardware("h100", catalog())), ModelError);
}

const char* kTp = "model: llama3-70b\nphase: decode\nbatch: 1\nseq_len: 2048\ntensor_parallel: {}\n";

std::string tp_workload(int tp) {
  std::string text = kTp;
  text.replace(text.find("{}"), 2, std::to_string(tp));
  return write("tp" + std::to_string(tp) + ".yaml", text).string();
}

TEST(TensorParallel, SplitsTheModelAndAddsAllReduces) {
  const auto tp1 = run_json(tp_workload(1), "dgx-h100");
  const auto tp4 = run_json(tp_workload(4), "dgx-h100");
  const auto tp8 = run_json(tp_workload(8), "dgx-h100");
  ASSERT_FALSE(tp4.is_null());
  // Two all-reduces a layer, one after the embedding; one all-gather of the logits.
  int allreduce = 0, allgather = 0;
  for (const auto& k : tp4["kernels"]) {
    allreduce += k["category"] == "allreduce";
    allgather += k["category"] == "allgather";
  }
  EXPECT_EQ(allreduce, 2 * 80 + 1);
  EXPECT_EQ(allgather, 1);
  EXPECT_EQ(kernel_time(tp1, "allreduce"), 0);
  // Weights per GPU: a quarter and an eighth (norms are replicated: slightly more).
  const double w1 = tp1["memory"]["weights_bytes"], w4 = tp4["memory"]["weights_bytes"], w8 = tp8["memory"]["weights_bytes"];
  EXPECT_NEAR(w4 / w1, 0.25, 0.01);
  EXPECT_NEAR(w8 / w1, 0.125, 0.01);
  EXPECT_EQ(tp4["memory"]["gpus"], 4);
  // Decode is weight-bound: faster with more GPUs, but not 4x (all-reduces, small GEMMs).
  const double t1 = tp1["total_us"], t4 = tp4["total_us"], t8 = tp8["total_us"];
  EXPECT_LT(t4, 0.5 * t1);
  EXPECT_GT(t4, 0.25 * t1);
  EXPECT_LT(t8, t4);
}

TEST(TensorParallel, RunsOverPcieOnGeForce) {
  // The RTX 5090 gives one CTA less shared memory than an H100: NCCL's kernels fit anyway, and the
  // all-reduces over PCIe through host memory cost far more than over NVSwitch once they carry
  // megabytes (a prefill's 4 MiB; a decode's 8 KiB ones are latency-bound either way).
  const std::string tp2 = write("tp2.yaml", "model: llama3-8b\nphase: prefill\nbatch: 1\nseq_len: 512\ntensor_parallel: 2\n").string();
  const auto pcie = run_json(tp2, "rtx5090-x2-pcie");
  const auto nvswitch = run_json(tp2, "hgx-h200");
  ASSERT_FALSE(pcie.is_null());
  ASSERT_FALSE(nvswitch.is_null());
  EXPECT_GT(kernel_time(pcie, "allreduce"), 1.5 * kernel_time(nvswitch, "allreduce"));
}

TEST(TensorParallel, BadInputIsExitTwoWithFileLineAndKey) {
  const auto r = run_gpusim({"run", tp_workload(4), "--hw", "h100"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(":5: tensor_parallel"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("h100-sxm5 has 1"), std::string::npos) << r.err;
  const auto odd = write("odd.yaml", "model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 64\ntensor_parallel: 3\n");
  const auto r3 = run_gpusim({"run", odd.string(), "--hw", "dgx-h100"});
  EXPECT_EQ(r3.status, 2);
  EXPECT_NE(r3.err.find("32 attention heads do not split over 3 GPUs"), std::string::npos) << r3.err;
  const auto experts = write("ep.yaml", "model: llama3-8b\nphase: decode\nbatch: 2\nseq_len: 64\nexpert_parallel: 2\n");
  const auto r4 = run_gpusim({"run", experts.string(), "--hw", "dgx-h100"});
  EXPECT_EQ(r4.status, 2);
  EXPECT_NE(r4.err.find("has no experts"), std::string::npos) << r4.err;
  const auto many = write("many.yaml", "model: llama3-8b\nphase: decode\nbatch: 1\nseq_len: 64\ntensor_parallel: 16\n");
  const auto r5 = run_gpusim({"run", many.string(), "--hw", "dgx-h100"});
  EXPECT_EQ(r5.status, 2);
  EXPECT_NE(r5.err.find("occupies 16 GPUs"), std::string::npos) << r5.err;
}

TEST(ExpertParallel, AllToAllAroundTheExperts) {
  const auto ep = write("mix.yaml", "model: mixtral-8x7b\nphase: decode\nbatch: 8\nseq_len: 512\nexpert_parallel: 4\n");
  const auto j = run_json(ep.string(), "dgx-h100");
  ASSERT_FALSE(j.is_null());
  int alltoall = 0;
  for (const auto& k : j["kernels"]) alltoall += k["category"] == "alltoall";
  EXPECT_EQ(alltoall, 2 * 32);  // dispatch and combine in every MoE layer
  const auto one = run_json(write("mix1.yaml", "model: mixtral-8x7b\nphase: decode\nbatch: 8\nseq_len: 512\n").string(), "h100");
  EXPECT_LT(j["memory"]["weights_bytes"].get<double>(), 0.4 * one["memory"]["weights_bytes"].get<double>());
}

TEST(DataParallel, GradientBucketsAllReduced) {
  const auto dp = write("dp.yaml", "model: llama3.2-1b\nphase: train\nbatch: 8\nseq_len: 256\ndata_parallel: 8\n");
  const auto j = run_json(dp.string(), "dgx-h100");
  ASSERT_FALSE(j.is_null());
  // DDP's buckets, filled in reverse parameter order, closed once they reach 1 MiB (the first)
  // or 25 MiB: each 33.5 MB MLP weight of Llama-3.2-1B fills one, the attention's weights and
  // norms join the next layer's down_proj, and the tied embedding comes last: 3 a layer + 1.
  int buckets = 0;
  double first_bucket = 1e30, last_bucket_end = 0, backward_end = 0, optimizer_start = 1e30;
  for (const auto& k : j["kernels"]) {
    const std::string op = k["op"];
    const double start = k["start_us"], end = start + k["duration_us"].get<double>();
    if (op.find("ddp.bucket") != std::string::npos) {
      ++buckets;
      EXPECT_NE(k["stream"], 0);  // DDP's own stream
      first_bucket = std::min(first_bucket, start);
      last_bucket_end = std::max(last_bucket_end, end);
    } else if (op.find("optimizer.") != std::string::npos) {
      optimizer_start = std::min(optimizer_start, start);
    } else {
      backward_end = std::max(backward_end, end);
    }
  }
  EXPECT_EQ(buckets, 3 * 16 + 1);
  EXPECT_LT(first_bucket, backward_end);       // the buckets overlap the backward
  EXPECT_GE(optimizer_start, last_bucket_end);  // and the optimizer waits for the last
  const auto inference = write("dpi.yaml", "model: llama3.2-1b\nphase: decode\nbatch: 8\nseq_len: 256\ndata_parallel: 2\n");
  EXPECT_EQ(run_gpusim({"run", inference.string(), "--hw", "dgx-h100"}).status, 2);
}

}  // namespace
}  // namespace gpusim
