// `gpusim serve` over several GPUs (issue 19): tensor_parallel and expert_parallel in a serve
// file, each step lowered as one GPU's shard with the group's all-reduces, the KV cache sized from
// one GPU's memory, the figures reported per GPU, and the keys serving refuses.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/hardware_loader.h"
#include "models/kernel_model.h"
#include "serve/serve_spec.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_files.h"
#include "workloads/op_lowering_cache.h"
#include "workloads/parameter_count.h"
#include "workloads/transformer_phases.h"

namespace gpusim::serve {
namespace {

using nlohmann::json;
using testing::config_dir;
using testing::run_gpusim;

std::string write(const std::string& name, const std::string& text) {
  const auto path = gpusim::testing::test_temp_path(name);
  std::ofstream(path) << text;
  return path.string();
}

// Low load: one request a second, each done long before the next arrives, so both degrees run
// the same steps (a prefill, then decodes of one sequence).
const std::string kLowLoad = "requests:\n  count: 4\n  arrival: fixed-rate\n  rate: 1\n  prompt_tokens: 512\n"
                             "  output_tokens: 12\n  seed: 1\n";

std::string llama70b(int tp) {
  return write("70b_tp" + std::to_string(tp) + ".yaml",
               "model: llama3-70b\ndtype: bf16\ntensor_parallel: " + std::to_string(tp) + "\n" + kLowLoad);
}

json serve_json(const std::string& file, const std::string& hw) {
  const auto r = run_gpusim({"serve", file, "--hw", hw, "--format", "json"});
  EXPECT_EQ(r.status, 0) << r.err;
  return r.status == 0 ? json::parse(r.out) : json{};
}

TEST(ServeParallel, Llama70bServesOnADgxWithTensorParallelAndMoreGpusServeFasterWithMoreCache) {
  const json tp4 = serve_json(llama70b(4), "dgx-h100"), tp8 = serve_json(llama70b(8), "dgx-h100");
  ASSERT_FALSE(tp4.is_null());
  ASSERT_FALSE(tp8.is_null());
  EXPECT_EQ(tp4["summary"]["completed"].get<int>(), 4);
  EXPECT_EQ(tp4["kv_cache"]["gpus"].get<int>(), 4);
  EXPECT_EQ(tp8["kv_cache"]["gpus"].get<int>(), 8);
  EXPECT_EQ(tp8["engine"]["tensor_parallel"].get<int>(), 8);
  // Per GPU: the weights halve (norms are replicated), each token's K and V halve (8 KV heads: 2
  // a GPU, then 1), so the cache holds far more than twice the blocks.
  const auto& k4 = tp4["kv_cache"];
  const auto& k8 = tp8["kv_cache"];
  EXPECT_NEAR(k8["weights_bytes"].get<double>() / k4["weights_bytes"].get<double>(), 0.5, 0.01);
  EXPECT_EQ(k8["bytes_per_token"].get<double>() * 2, k4["bytes_per_token"].get<double>());
  EXPECT_EQ(k4["bytes_per_token"].get<double>(), 80.0 * 2 * 2 * 128 * 2);  // layers x K,V x heads x dim x bf16
  EXPECT_GT(k8["blocks"].get<double>(), 2 * k4["blocks"].get<double>());
  // Weights per GPU are a quarter of the model's 70.55 B parameters in bf16.
  EXPECT_NEAR(k4["weights_bytes"].get<double>() / (70.553706496e9 * 2), 0.25, 0.005);
  // The same steps, each faster on eight GPUs (half the weights and heads a GPU, all-reduces
  // among eight).
  const auto& s4 = tp4["steps"];
  const auto& s8 = tp8["steps"];
  ASSERT_EQ(s4.size(), s8.size());
  ASSERT_EQ(s4.size(), 4u * 12u);
  for (std::size_t i = 0; i < s4.size(); ++i) {
    EXPECT_EQ(s4[i]["tokens"], s8[i]["tokens"]) << i;
    EXPECT_LT(s8[i]["gpu_us"].get<double>(), 0.85 * s4[i]["gpu_us"].get<double>()) << i;
  }
  EXPECT_LT(tp8["summary"]["tpot_s"]["p50"].get<double>(), tp4["summary"]["tpot_s"]["p50"].get<double>());
  // The table says the figures are per GPU.
  const auto table = run_gpusim({"serve", llama70b(4), "--hw", "dgx-h100"});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("GPUs: 4 (tensor_parallel 4, expert_parallel 1); memory figures are per GPU"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("KV cache per GPU: "), std::string::npos) << table.out;
  // One chip cannot hold the model's weights: no cache is left (the error suggests tensor_parallel).
  const auto one = run_gpusim({"serve", write("70b.yaml", "model: llama3-70b\n" + kLowLoad), "--hw", "h100"});
  EXPECT_EQ(one.status, 2);
  EXPECT_NE(one.err.find("tensor_parallel"), std::string::npos) << one.err;
}

TEST(ServeParallel, ARaggedServingStepOfOneGpuCarriesTheTensorParallelCollectives) {
  const auto hw = hw::load_hardware("dgx-h100", hw::PresetCatalog(std::vector{config_dir() / "hw", config_dir() / "systems"}));
  const auto spec = load_serve_spec(llama70b(4), {}, config_dir() / "engines", config_dir() / "models");
  ASSERT_EQ(spec.model.parallel.tensor, 4);
  const auto models = models::default_kernel_models();
  workloads::OpLoweringCache lowering(hw, models);
  // A prefill chunk against its cached start beside three decodes, as the scheduler forms them.
  const workloads::StepShape mix(std::vector<workloads::SeqSlice>{{256, 512, true}, {1, 900, true}, {1, 40, true}, {1, 3000, true}});
  const auto step = workloads::build_step(spec.model, "serve", mix, lowering);
  int allreduce = 0, allgather = 0, qkv = 0;
  for (std::size_t v = 0; v < step.dag.size(); ++v) {
    const auto& k = step.dag[v];
    allreduce += k.launch.name.find("ncclDevKernel_AllReduce") == 0;
    allgather += k.launch.name.find("ncclDevKernel_AllGather") == 0;
    qkv += k.op == "layers[0].attn.qkv_proj" ? 1 : 0;
  }
  EXPECT_EQ(allreduce, 2 * 80 + 1);  // after o_proj and down in every layer, after the embedding
  EXPECT_EQ(allgather, 1);           // the vocabulary-parallel lm_head's logits
  EXPECT_GE(qkv, 1);
}

TEST(ServeParallel, ExpertsSplitOverTheTensorParallelGroup) {
  const auto file = write("mixtral_ep.yaml", "model: mixtral-8x7b\ntensor_parallel: 4\nexpert_parallel: 4\n"
                                             "requests:\n  count: 2\n  arrival: all-at-once\n  prompt_tokens: 128\n"
                                             "  output_tokens: 4\n");
  const json j = serve_json(file, "dgx-h100");
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["summary"]["completed"].get<int>(), 2);
  EXPECT_EQ(j["kv_cache"]["gpus"].get<int>(), 4);
  EXPECT_EQ(j["engine"]["expert_parallel"].get<int>(), 4);
  const auto spec = load_serve_spec(file, {}, config_dir() / "engines", config_dir() / "models");
  const double whole = static_cast<double>(workloads::parameter_count(spec.model.model)) * 2;
  EXPECT_NEAR(j["kv_cache"]["weights_bytes"].get<double>() / whole, 0.25, 0.01);
}

// Exit status 2 and "FILE:LINE: KEY" in the message, with `what` in it.
void expect_refused(const std::string& name, const std::string& text, const std::string& hw, int line,
                    const std::string& key, const std::string& what, std::vector<std::string> more = {}) {
  const auto file = write(name, text + kLowLoad);
  std::vector<std::string> args{"serve", file, "--hw", hw};
  args.insert(args.end(), more.begin(), more.end());
  const auto r = run_gpusim(args);
  EXPECT_EQ(r.status, 2) << name << ": " << r.err;
  EXPECT_NE(r.err.find(file + ":" + std::to_string(line) + ": " + key), std::string::npos) << name << ": " << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << name << ": " << r.err;
}

TEST(ServeParallel, BadParallelKeysExitTwoNamingFileLineAndKey) {
  expect_refused("chip.yaml", "model: llama3-8b\ntensor_parallel: 2\n", "h100", 2, "tensor_parallel", "h100-sxm5 has 1");
  expect_refused("heads.yaml", "model: llama3-8b\ntensor_parallel: 3\n", "dgx-h100", 2, "tensor_parallel",
                 "32 attention heads do not split over 3 GPUs");
  expect_refused("many.yaml", "model: llama3-8b\ndtype: bf16\ntensor_parallel: 16\n", "dgx-h100", 3, "tensor_parallel",
                 "occupies 16 GPUs");
  expect_refused("dense_ep.yaml", "model: llama3-8b\nexpert_parallel: 2\n", "dgx-h100", 2, "expert_parallel",
                 "has no experts");
  expect_refused("ep_alone.yaml", "model: mixtral-8x7b\nexpert_parallel: 4\n", "dgx-h100", 2, "expert_parallel",
                 "give tensor_parallel equal to expert_parallel");
  expect_refused("ep_tp.yaml", "model: mixtral-8x7b\ntensor_parallel: 2\nexpert_parallel: 4\n", "dgx-h100", 3,
                 "expert_parallel", "expert_parallel 4 with tensor_parallel 2");
  expect_refused("dp.yaml", "model: llama3-8b\ndata_parallel: 2\n", "dgx-h100", 2, "data_parallel",
                 "independent engines");
  expect_refused("pp.yaml", "model: llama3-8b\npipeline_parallel: 2\n", "dgx-h100", 2, "pipeline_parallel",
                 "not modeled for serving");
  expect_refused("mb.yaml", "model: llama3-8b\nmicro_batches: 2\n", "dgx-h100", 2, "micro_batches", "pipeline_parallel");
  expect_refused("zero.yaml", "model: llama3-8b\ntensor_parallel: 0\n", "dgx-h100", 2, "tensor_parallel", "");
  // From the command line, the key named as --set gave it.
  const auto r = run_gpusim({"serve", write("set.yaml", "model: llama3-8b\n" + kLowLoad), "--hw", "dgx-h100", "--set",
                             "workload.tensor_parallel=3"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("tensor_parallel"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("do not split over 3 GPUs"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpusim::serve
