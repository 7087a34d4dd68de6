// Pipeline parallelism (issue 19): the schedule's bubbles against their closed forms, the stages'
// share of the model (layers, layer kinds, weights), and whole runs through `gpusim run`.
#include <gtest/gtest.h>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"
#include "workloads/parallelism.h"
#include "workloads/pipeline_schedule.h"
#include "workloads/workload.h"

namespace gpusim {
namespace {

using testing::run_gpusim;
using testing::run_json;
using testing::TempDir;
using workloads::schedule_pipeline;
using workloads::StageTimes;

TEST(PipelineSchedule, ForwardOnlyFillsAndDrains) {
  // p uniform stages of t, m micro-batches: (m + p - 1) t, each stage idle (p - 1) t.
  const std::vector<StageTimes> four(4, StageTimes{10, 0, 0, 0, 0});
  const auto s = schedule_pipeline(four, 4, false);
  EXPECT_DOUBLE_EQ(s.makespan_us, 70);
  for (int stage = 0; stage < 4; ++stage) EXPECT_DOUBLE_EQ(s.idle_us(stage), 30);
  EXPECT_DOUBLE_EQ(s.stages[3][0].start_us, 30);
  // A receive starts with its neighbour's send: each stage starts the send's time earlier.
  const std::vector<StageTimes> sends(4, StageTimes{10, 0, 2, 0, 0});
  EXPECT_DOUBLE_EQ(schedule_pipeline(sends, 4, false).makespan_us, 4 * 10 + 3 * 8);
  // A slow stage sets the pace: the others wait for it.
  std::vector<StageTimes> slow(3, StageTimes{10, 0, 0, 0, 0});
  slow[1].forward_us = 30;
  EXPECT_DOUBLE_EQ(schedule_pipeline(slow, 5, false).makespan_us, 10 + 5 * 30 + 10);
}

TEST(PipelineSchedule, OneForwardOneBackward) {
  // 1F1B with uniform stages: (m + p - 1)(F + B), then the optimizer.
  const std::vector<StageTimes> four(4, StageTimes{1, 2, 0, 0, 5});
  const auto s = schedule_pipeline(four, 8, true);
  EXPECT_DOUBLE_EQ(s.makespan_us, (8 + 4 - 1) * 3 + 5);
  for (int stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(s.stages[static_cast<std::size_t>(stage)].size(), 16u);
    EXPECT_DOUBLE_EQ(s.busy_us(stage), 8 * 3 + 5);
  }
  // The first stage fills the pipeline with p - 1 forwards before its first backward.
  EXPECT_FALSE(s.stages[0][2].backward);
  EXPECT_FALSE(s.stages[0][3].backward);
  EXPECT_TRUE(s.stages[0][4].backward);
  EXPECT_TRUE(s.stages[3][1].backward);  // the last stage alternates from the start
  // Fewer micro-batches than stages still drains.
  EXPECT_DOUBLE_EQ(schedule_pipeline(four, 1, true).makespan_us, 4 * 3 + 5);
}

TEST(PipelineStages, EachStageDescribesItsOwnLayers) {
  workloads::ModelWorkload w;
  w.model.layers = 7;
  w.model.heads = w.model.kv_heads = 4;
  w.model.sliding_window = 128;
  w.model.sliding_layers = {true, true, false};
  w.model.moe = workloads::MoeConfig{};
  w.model.moe->experts = 4;
  w.model.moe->dense_layers = 3;
  w.parallel.pipeline = 2;
  w.batch = 4;
  // A routing trace names the whole model's layers: each stage gets its own, from 0.
  w.layer_expert_weights = {{3, {1, 0, 0, 0}}, {5, {0, 1, 0, 0}}};
  const auto a = workloads::rank_shard(w, 0), b = workloads::rank_shard(w, 1);
  EXPECT_EQ(a.layer_expert_weights,
            (std::map<std::int64_t, std::vector<double>>{{3, {1, 0, 0, 0}}}));
  EXPECT_EQ(b.layer_expert_weights,
            (std::map<std::int64_t, std::vector<double>>{{1, {0, 1, 0, 0}}}));
  EXPECT_EQ(b.expert_weights_for(1), (std::vector<double>{0, 1, 0, 0}));
  EXPECT_TRUE(b.expert_weights_for(0).empty());
  EXPECT_EQ(a.model.layers, 4);  // the first stage takes the odd layer
  EXPECT_EQ(b.model.layers, 3);
  EXPECT_EQ(workloads::stage_first_layer(7, 2, 1), 4);
  for (std::int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a.model.sliding_layer(i), w.model.sliding_layer(i));
    EXPECT_EQ(a.model.moe_layer(i), w.model.moe_layer(i));
  }
  for (std::int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b.model.sliding_layer(i), w.model.sliding_layer(4 + i)) << i;
    EXPECT_EQ(b.model.moe_layer(i), w.model.moe_layer(4 + i)) << i;
  }
  EXPECT_TRUE(a.first_stage());
  EXPECT_FALSE(a.last_stage());
  EXPECT_TRUE(b.last_stage());
}

constexpr const char* kDecode = "model: llama3-8b\nphase: decode\nbatch: 8\nseq_len: 1024\nlowering: fused\n";

double category_time(const nlohmann::json& j, const std::string& category) {
  double t = 0;
  for (const auto& k : j["kernels"]) {
    if (k["category"] == category) t += k["duration_us"].get<double>();
  }
  return t;
}

TEST(PipelineParallel, StagesSplitTheWorkAndSendBetweenThem) {
  TempDir dir;
  const auto one = run_json(dir.write("one.yaml", kDecode).string(), "dgx-h100");
  const auto pp = run_json(dir.write("pp.yaml", std::string(kDecode) + "pipeline_parallel: 4\n").string(), "dgx-h100");
  ASSERT_FALSE(pp.is_null());
  ASSERT_EQ(pp["pipeline"]["stages"], 4);
  std::int64_t layers = 0;
  for (const auto& s : pp["pipeline"]["stage"]) layers += s["layers"].get<std::int64_t>();
  EXPECT_EQ(layers, 32);
  // One micro-batch: the same kernels, split over the stages, with a send and a receive at each
  // of the three boundaries.
  int sends = 0;
  for (const auto& k : pp["kernels"]) sends += k["category"] == "sendrecv";
  EXPECT_EQ(sends, 2 * 3);
  const double work = pp["kernel_time_us"].get<double>() - category_time(pp, "sendrecv");
  EXPECT_NEAR(work / one["kernel_time_us"].get<double>(), 1.0, 0.03);
  // With one micro-batch the stages run one after another: no faster than one GPU.
  EXPECT_GT(pp["total_us"].get<double>(), one["total_us"].get<double>());
  // Weights per GPU: about a quarter (the embedding on the first stage, lm_head on the last).
  const double share = pp["memory"]["weights_bytes"].get<double>() / one["memory"]["weights_bytes"].get<double>();
  EXPECT_GT(share, 0.25);
  EXPECT_LT(share, 0.40);
  EXPECT_EQ(pp["memory"]["gpus"], 4);
}

TEST(PipelineParallel, MicroBatchesFillThePipeline) {
  TempDir dir;
  const auto m1 = run_json(dir.write("m1.yaml", std::string(kDecode) + "pipeline_parallel: 4\n").string(), "dgx-h100");
  const auto m4 = run_json(
      dir.write("m4.yaml", std::string(kDecode) + "pipeline_parallel: 4\nmicro_batches: 4\n").string(), "dgx-h100",
      {"--trace", (dir.path() / "trace.json").string()});
  ASSERT_FALSE(m4.is_null());
  // The first micro-batch crosses every stage, the others follow at the slowest stage's pace
  // (the last: it has lm_head): sum of F_s + (m - 1) max F_s, less the sends' overlap.
  double sum = 0, slowest = 0;
  for (const auto& s : m4["pipeline"]["stage"]) {
    const double f = s["busy_us"].get<double>() / 4;
    sum += f;
    slowest = std::max(slowest, f);
  }
  EXPECT_NEAR(m4["total_us"].get<double>() / (sum + 3 * slowest), 1.0, 0.02);
  EXPECT_GT(m4["pipeline"]["stage"][0]["idle_us"].get<double>(), 0);
  // One micro-batch: every stage idles three quarters of the step.
  const auto& lone = m1["pipeline"]["stage"][1];
  EXPECT_NEAR(lone["idle_us"].get<double>() / (lone["idle_us"].get<double>() + lone["busy_us"].get<double>()), 0.75,
              0.03);
  // The trace has a process per GPU, each with its stage's kernels.
  const auto trace = nlohmann::json::parse(testing::read_file(dir.path() / "trace.json"));
  std::set<int> pids;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "sendrecv") pids.insert(e["pid"].get<int>());
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1, 2, 3}));
}

TEST(PipelineParallel, WithTensorParallelStagesAndGenerate) {
  TempDir dir;
  const auto gen = run_json(dir.write("gen.yaml", "model: llama3-8b\nphase: generate\nbatch: 4\nseq_len: 256\noutput_len: 4\n"
                                                  "tensor_parallel: 2\npipeline_parallel: 2\nmicro_batches: 2\n")
                                .string(),
                            "dgx-h100");
  ASSERT_FALSE(gen.is_null());
  EXPECT_EQ(gen["pipeline"]["gpus_per_stage"], 2);
  EXPECT_GT(category_time(gen, "allreduce"), 0);
  EXPECT_GT(category_time(gen, "sendrecv"), 0);
  EXPECT_GT(gen["generation"]["tpot_us"].get<double>(), 0);
}

TEST(PipelineParallel, BadInputIsExitTwoWithTheKey) {
  TempDir dir;
  const auto deep = run_gpusim({"run", dir.write("deep.yaml", std::string(kDecode) + "pipeline_parallel: 64\n").string(),
                                "--hw", "dgx-h100"});
  EXPECT_EQ(deep.status, 2);
  EXPECT_NE(deep.err.find("32 layers cannot fill 64 pipeline stages"), std::string::npos) << deep.err;
  const auto odd = run_gpusim({"run", dir.write("odd.yaml", std::string(kDecode) + "pipeline_parallel: 2\nmicro_batches: 3\n").string(),
                               "--hw", "dgx-h100"});
  EXPECT_EQ(odd.status, 2);
  EXPECT_NE(odd.err.find("micro_batches"), std::string::npos) << odd.err;
  const auto alone = run_gpusim({"run", dir.write("alone.yaml", std::string(kDecode) + "micro_batches: 2\n").string(),
                                 "--hw", "dgx-h100"});
  EXPECT_EQ(alone.status, 2);
  EXPECT_NE(alone.err.find("is for pipeline_parallel > 1"), std::string::npos) << alone.err;
  const auto big = run_gpusim({"run", dir.write("big.yaml", std::string(kDecode) + "pipeline_parallel: 16\n").string(),
                               "--hw", "dgx-h100"});
  EXPECT_EQ(big.status, 2);
  EXPECT_NE(big.err.find("occupies 16 GPUs"), std::string::npos) << big.err;
}

constexpr const char* kTrain = "model: llama3.2-1b\nphase: train\nbatch: 4\nseq_len: 512\nlowering: hf-eager\n";

int count_ops(const nlohmann::json& j, const std::string& category, const std::string& op_part) {
  int n = 0;
  for (const auto& k : j["kernels"]) {
    n += k["category"] == category && k["op"].get<std::string>().find(op_part) != std::string::npos;
  }
  return n;
}

TEST(PipelineParallel, TrainingRunsOneForwardOneBackward) {
  TempDir dir;
  const auto one = run_json(dir.write("one.yaml", kTrain).string(), "dgx-h100");
  const auto pp = run_json(
      dir.write("pp.yaml", std::string(kTrain) + "pipeline_parallel: 2\nmicro_batches: 2\ndata_parallel: 2\n").string(),
      "dgx-h100");
  ASSERT_FALSE(pp.is_null());
  // Each micro-batch: the activations forward and their gradients back at the one boundary,
  // a send on one side and a receive on the other.
  EXPECT_EQ(count_ops(pp, "sendrecv", "pp."), 4 * 2);
  // The optimizer and DDP's buckets run once a step on each stage, not once a micro-batch.
  int updates = 0, per_micro_batch = 0;
  for (const auto& k : pp["kernels"]) {
    const std::string op = k["op"];
    const bool once = op.find("optimizer.") != std::string::npos || op.find("ddp.bucket") != std::string::npos;
    updates += op.find("optimizer.update") != std::string::npos;
    per_micro_batch += once && op.find("micro-batch") != std::string::npos;
  }
  EXPECT_GT(updates, 0);
  EXPECT_EQ(per_micro_batch, 0);
  const int buckets = count_ops(pp, "allreduce", "ddp.bucket");
  EXPECT_GT(buckets, 0);
  EXPECT_LT(buckets, 2 * 60);  // 1.24 B bf16 gradients in 25 MiB buckets over two stages
  // Half the model a GPU and a quarter of the batch a micro-batch (two data-parallel replicas of
  // two micro-batches): faster than one GPU's step of the whole batch, though the pipeline's
  // bubbles and the data-parallel all-reduce cost.
  EXPECT_LT(pp["total_us"].get<double>(), 0.8 * one["total_us"].get<double>());
  // The fused (compiled) training lowering takes the same keys: the stages' sends, the TP
  // all-reduces forward and backward, no per-micro-batch optimizer.
  const auto fused = run_json(dir.write("fused.yaml", "model: llama3.2-1b\nphase: train\nbatch: 4\nseq_len: 512\n"
                                                      "lowering: fused\npipeline_parallel: 2\nmicro_batches: 2\n"
                                                      "tensor_parallel: 2\n").string(),
                              "dgx-h100");
  ASSERT_FALSE(fused.is_null());
  EXPECT_EQ(count_ops(fused, "sendrecv", "pp."), 4 * 2);
  EXPECT_EQ(count_ops(fused, "allreduce", "grad_allreduce"), 2 * (2 * 8) * 2 + 2);  // 2 a layer, 2 micro-batches; the head's
  EXPECT_EQ(count_ops(fused, "allreduce", "loss."), 3 * 2);
}

TEST(TensorParallel, TrainingAllReducesTheBackwardToo) {
  TempDir dir;
  const auto one = run_json(dir.write("one.yaml", kTrain).string(), "dgx-h100");
  const auto tp = run_json(dir.write("tp.yaml", std::string(kTrain) + "tensor_parallel: 2\n").string(), "dgx-h100");
  ASSERT_FALSE(tp.is_null());
  // Megatron's f and g: two all-reduces a layer forward and two backward (the column-parallel
  // projections' input gradients), the embedding's, the head's input gradient, and the
  // vocabulary-parallel loss's three.
  EXPECT_EQ(count_ops(tp, "allreduce", ".allreduce") - count_ops(tp, "allreduce", "loss."), 2 * 16 + 1);
  EXPECT_EQ(count_ops(tp, "allreduce", "grad_allreduce"), 2 * 16 + 1);
  EXPECT_EQ(count_ops(tp, "allreduce", "loss."), 3);
  EXPECT_EQ(count_ops(tp, "allgather", ""), 0);  // the loss reads each GPU's slice of the logits
  EXPECT_NEAR(tp["memory"]["weights_bytes"].get<double>() / one["memory"]["weights_bytes"].get<double>(), 0.5, 0.02);
  EXPECT_LT(tp["total_us"].get<double>(), one["total_us"].get<double>());
}

}  // namespace
}  // namespace gpusim
