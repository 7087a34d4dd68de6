// gpusim serve end to end (serve/, src/serve_command.cpp): request files and generators, the
// run's invariants, determinism, the step cache against simulating every step, ragged steps
// against uniform ones, and every bad-input class.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "serve/requests.h"
#include "serve/serve_run.h"
#include "serve/serve_spec.h"
#include "sim/error.h"
#include "tests/support/cli_runner.h"
#include "tests/support/model_workloads.h"
#include "tests/support/temp_files.h"
#include "workloads/layer_repeat.h"
#include "workloads/model_run.h"

namespace gpusim::serve {
namespace {

using nlohmann::json;
const std::filesystem::path kRepo = GPUSIM_REPO_DIR;

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = gpusim::testing::test_temp_path(name);
  std::ofstream(path) << text;
  return path.string();
}

// A small serve file: a 4-layer Llama-3.2-1B-shaped model (tied embeddings aside) so the tests
// run fast.
std::string serve_file(const std::string& name, const std::string& requests, const std::string& extra = "") {
  return temp_file(name + ".yaml",
                   "model: {name: tiny-llama, layers: 4, d_model: 2048, heads: 32, kv_heads: 8, d_ff: 8192, vocab: 128256, "
                   "norm: rmsnorm, activation: swiglu, positions: rope}\n"
                   "dtype: bf16\n" + extra + "requests:\n" + requests);
}

const std::string kGenerated =
    "  count: 40\n  arrival: poisson\n  rate: 50\n  prompt_tokens: {uniform: [16, 600]}\n  output_tokens: 24\n  seed: 7\n";

TEST(ServeRequests, FilesOfBothFormatsAndTheirErrors) {
  const auto jsonl = temp_file("r.jsonl", "{\"id\": \"a\", \"arrival\": 0.5, \"prompt_tokens\": 100, \"output_tokens\": 10}\n"
                                          "\n{\"arrival\": 0.1, \"prompt_tokens\": 20, \"output_tokens\": 5}\n");
  const auto r = read_requests(jsonl);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].prompt_tokens, 20);  // sorted by arrival
  EXPECT_EQ(r[1].id, "a");
  const auto csv = temp_file("r.csv", "arrival_s,prompt_tokens,output_tokens\n0,64,8\n1.5,128,16\n");
  EXPECT_EQ(read_requests(csv).size(), 2u);
  const auto line_of = [](const std::string& file) {
    try {
      read_requests(file);
    } catch (const ConfigError& e) {
      return e.line();
    }
    return -1;
  };
  EXPECT_EQ(line_of(temp_file("bad1.jsonl", "{\"prompt_tokens\": 1, \"output_tokens\": 1}\n{\"prompt_tokens\": 0, \"output_tokens\": 1}\n")), 2);
  EXPECT_EQ(line_of(temp_file("bad2.jsonl", "{\"prompt_tokens\": 1, \"output_tokens\": 1}\nnot json\n")), 2);
  EXPECT_EQ(line_of(temp_file("bad3.jsonl", "{\"prompt_tokens\": 1, \"output_tokens\": 1, \"colour\": 2}\n")), 1);
  EXPECT_EQ(line_of(temp_file("bad4.csv", "prompt_tokens,output_tokens\n5,5\n6,x\n")), 3);
  EXPECT_EQ(line_of(temp_file("bad5.csv", "prompt_tokens,output_tokens\n5,5,5\n")), 2);
  EXPECT_THROW(read_requests("/nonexistent/requests.jsonl"), ConfigError);
}

TEST(ServeRequests, GeneratorsAreSeededAndDrawWhatTheySay) {
  GeneratorSpec g;
  g.count = 4000;
  g.arrival = {ArrivalSpec::Kind::kPoisson, 20.0};
  g.prompt.kind = LengthSpec::Kind::kUniform;
  g.prompt.min = 10;
  g.prompt.max = 20;
  g.output.value = 7;
  g.seed = 3;
  const auto a = generate_requests(g), b = generate_requests(g);
  ASSERT_EQ(a.size(), 4000u);
  double mean_prompt = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    EXPECT_GE(a[i].prompt_tokens, 10);
    EXPECT_LE(a[i].prompt_tokens, 20);
    EXPECT_EQ(a[i].output_tokens, 7);
    if (i > 0) {
      EXPECT_GE(a[i].arrival_s, a[i - 1].arrival_s);
    }
    mean_prompt += static_cast<double>(a[i].prompt_tokens) / 4000.0;
  }
  // 3999 gaps of mean 1/20 s: the last arrival near 200 s (within 5%); the uniform mean 15.
  EXPECT_NEAR(a.back().arrival_s, 3999.0 / 20.0, 10.0);
  EXPECT_NEAR(mean_prompt, 15.0, 0.3);
  g.seed = 4;
  EXPECT_NE(generate_requests(g)[5].arrival_s, a[5].arrival_s);
}

TEST(ServeRequests, ANamedDistributionGivesWholeRowsOfItsTable) {
  const auto spec = load_serve_spec(serve_file("sharegpt", "  count: 500\n  arrival: all-at-once\n  lengths: sharegpt-8k\n  seed: 3\n"),
                                    {}, kRepo / "configs" / "engines", kRepo / "configs" / "models");
  const auto table = read_length_pairs(kRepo / "configs" / "distributions" / "sharegpt-8k.csv");
  ASSERT_EQ(table.rows.size(), 30731u);
  const std::set<std::pair<std::int64_t, std::int64_t>> rows(table.rows.begin(), table.rows.end());
  ASSERT_EQ(spec.requests.size(), 500u);
  double prompt_sum = 0;
  for (const auto& r : spec.requests) {
    EXPECT_TRUE(rows.count({r.prompt_tokens, r.output_tokens})) << r.prompt_tokens << "," << r.output_tokens;
    prompt_sum += static_cast<double>(r.prompt_tokens);
  }
  // The table's prompts average 2,340 tokens; 500 draws land near it.
  EXPECT_NEAR(prompt_sum / 500, 2340, 250);
  EXPECT_NE(spec.requests_source.find("sharegpt-8k"), std::string::npos);
  // Bad tables and names: file, line and key.
  const auto error = [](const std::string& text) {
    try {
      read_length_pairs(temp_file("pairs.csv", text));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("prompt,output\n1,2\n").find("header"), std::string::npos);
  EXPECT_NE(error("# c\nprompt_tokens,output_tokens\n1,2\n3,x\n").find(":4: output_tokens"), std::string::npos);
  EXPECT_NE(error("prompt_tokens,output_tokens\n0,2\n").find("prompt_tokens"), std::string::npos);
  EXPECT_NE(error("prompt_tokens,output_tokens\n").find("no rows"), std::string::npos);
  const auto status = [](const std::string& f) { return gpusim::testing::run_gpusim({"serve", f, "--hw", "h100"}).status; };
  EXPECT_EQ(status(serve_file("nodist", "  count: 3\n  arrival: all-at-once\n  lengths: alpaca\n")), 2);
  EXPECT_EQ(status(serve_file("both", "  count: 3\n  arrival: all-at-once\n  lengths: sharegpt-8k\n  prompt_tokens: 8\n")), 2);
}

TEST(ServeRun, EveryRequestIsServedInOrderAndTheRunIsDeterministic) {
  const auto file = serve_file("run", kGenerated, "slo: {ttft: 200ms}\n");
  const auto r1 = gpusim::testing::run_gpusim({"serve", file, "--hw", "h100", "--format", "json"});
  ASSERT_EQ(r1.status, 0) << r1.err;
  EXPECT_EQ(gpusim::testing::run_gpusim({"serve", file, "--hw", "h100", "--format", "json"}).out, r1.out);
  const json j = json::parse(r1.out);
  EXPECT_EQ(j["summary"]["completed"].get<int>(), 40);
  double last_end = 0;
  for (const auto& s : j["steps"]) {
    // Steps do not overlap (within the JSON's 9 significant digits).
    EXPECT_GE(s["start_s"].get<double>() * (1 + 1e-8), last_end);
    last_end = s["start_s"].get<double>() + s["duration_s"].get<double>();
    EXPECT_GT(s["gpu_us"].get<double>(), 0.0);
    EXPECT_LE(s["tokens"].get<int>(), 8192);
  }
  for (const auto& q : j["requests"]) {
    const auto& t = q["token_times_s"];
    ASSERT_EQ(t.size(), 24u);
    EXPECT_GT(q["ttft_s"].get<double>(), 0.0);
    EXPECT_GE(q["queueing_s"].get<double>(), 0.0);
    for (std::size_t k = 1; k < t.size(); ++k) {
      EXPECT_GT(t[k].get<double>(), t[k - 1].get<double>());
    }
    EXPECT_NEAR(q["e2e_s"].get<double>(), t.back().get<double>() - q["arrival_s"].get<double>(), 1e-9);
  }
  // A faster chip serves the same requests sooner.
  const auto h200 = gpusim::testing::run_gpusim({"serve", file, "--hw", "h200", "--format", "json"});
  EXPECT_LT(json::parse(h200.out)["summary"]["e2e_s"]["mean"].get<double>(), j["summary"]["e2e_s"]["mean"].get<double>());
}

TEST(ServeRun, ReusedStepsAndKernelsGiveTheRunOfSimulatingEveryStep) {
  // Three requests, and three alike long after they finish: the second group's steps repeat the
  // first's shapes.
  const std::string group = "{\"arrival\": 0, \"prompt_tokens\": 64, \"output_tokens\": 8}\n"
                            "{\"arrival\": 0, \"prompt_tokens\": 40, \"output_tokens\": 6}\n"
                            "{\"arrival\": 0, \"prompt_tokens\": 300, \"output_tokens\": 5}\n";
  const std::string later = "{\"arrival\": 100, \"prompt_tokens\": 64, \"output_tokens\": 8}\n"
                            "{\"arrival\": 100, \"prompt_tokens\": 40, \"output_tokens\": 6}\n"
                            "{\"arrival\": 100, \"prompt_tokens\": 300, \"output_tokens\": 5}\n";
  const auto spec = load_serve_spec(serve_file("reuse", "  file: " + temp_file("reuse.jsonl", group + later) + "\n"), {},
                                    kRepo / "configs" / "engines", kRepo / "configs" / "models");
  const auto hw = gpusim::testing::preset("h100");
  const auto models = models::default_kernel_models();
  const auto fast = run_serve(spec, hw, models, {}, true), slow = run_serve(spec, hw, models, {}, false);
  ASSERT_EQ(fast.steps.size(), slow.steps.size());
  EXPECT_GT(fast.shapes_reused, 0u);  // all six decode the same lengths: steps repeat
  for (std::size_t i = 0; i < fast.steps.size(); ++i) EXPECT_EQ(fast.steps[i].gpu_us, slow.steps[i].gpu_us) << i;
  for (std::size_t i = 0; i < fast.requests.size(); ++i) EXPECT_EQ(fast.requests[i].token_s, slow.requests[i].token_s);
}

TEST(ServeRun, RaggedStepsOfEqualDecodesCostWhatAUniformDecodeStepCosts) {
  auto w = gpusim::testing::model_workload("model: {name: t, layers: 8, d_model: 2048, heads: 32, kv_heads: 8, d_ff: 8192, "
                                           "vocab: 128256, norm: rmsnorm, activation: swiglu, positions: rope}\nphase: decode\n"
                                           "batch: 8\nseq_len: 700\ndtype: bf16\nlowering: fused\n");
  const auto hw = gpusim::testing::preset("h100");
  const auto models = models::default_kernel_models();
  workloads::OpLoweringCache lowering(hw, models);
  hw::KernelOutcomeCache cache(hw);
  const auto uniform = workloads::simulate_repeating_layers(w, "decode", workloads::StepShape(8, 1, 700), lowering,
                                                            hw::LaunchMode::kGraph, cache);
  const auto ragged = workloads::simulate_repeating_layers(
      w, "serve", workloads::StepShape(std::vector<workloads::SeqSlice>(8, {1, 700, true})), lowering, hw::LaunchMode::kGraph, cache);
  ASSERT_TRUE(uniform && ragged);
  EXPECT_NEAR(ragged->run.total_us / uniform->run.total_us, 1.0, 0.01);
  // A chunk against a long cached context costs more than the same chunk alone.
  const auto alone = workloads::simulate_repeating_layers(
      w, "serve", workloads::StepShape(std::vector<workloads::SeqSlice>{{512, 0, true}}), lowering, hw::LaunchMode::kGraph, cache);
  const auto late = workloads::simulate_repeating_layers(
      w, "serve", workloads::StepShape(std::vector<workloads::SeqSlice>{{512, 8192, true}}), lowering, hw::LaunchMode::kGraph, cache);
  ASSERT_TRUE(alone && late);
  EXPECT_GT(late->run.total_us, 1.05 * alone->run.total_us);
}

TEST(ServeRun, RequestsThatCanNeverRunAreReportedAndBadInputIsRefused) {
  // A cache of 4 blocks of 16 tokens: the 100-token prompt can never be admitted.
  const auto file = serve_file("rejected", "  file: " + temp_file("rej.jsonl",
                                                                  "{\"prompt_tokens\": 20, \"output_tokens\": 4}\n"
                                                                  "{\"prompt_tokens\": 100, \"output_tokens\": 4}\n"),
                               "scheduler: {num_blocks: 4}\n");
  const auto r = gpusim::testing::run_gpusim({"serve", file, "--hw", "h100", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["summary"]["completed"].get<int>(), 1);
  EXPECT_EQ(j["summary"]["rejected"].get<int>(), 1);
  EXPECT_NE(j["requests"][1]["rejected"].get<std::string>().find("blocks"), std::string::npos);
  const auto status = [](const std::string& f, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"serve", f, "--hw", "h100"};
    args.insert(args.end(), more.begin(), more.end());
    const auto res = gpusim::testing::run_gpusim(args);
    EXPECT_NE(res.err.find("error"), std::string::npos) << res.err;
    return res.status;
  };
  EXPECT_EQ(status(serve_file("rate0", "  count: 3\n  arrival: poisson\n  rate: 0\n  prompt_tokens: 8\n  output_tokens: 8\n")), 2);
  EXPECT_EQ(status(serve_file("unknown", kGenerated, "colour: blue\n")), 2);
  EXPECT_EQ(status(serve_file("engine", kGenerated, "engine: tgi\n")), 2);
  EXPECT_EQ(status(serve_file("badfile", "  file: /nonexistent.jsonl\n")), 2);
  EXPECT_EQ(status(serve_file("fp32", kGenerated, "dtype: fp32\n").substr(0)), 2);
  EXPECT_EQ(status(serve_file("ok", kGenerated), {"--set", "workload.requests.rate=-1"}), 2);
  // A cache too small for every request is an error, not a run of rejections.
  EXPECT_EQ(status(serve_file("tiny_cache", kGenerated, "scheduler: {num_blocks: 1}\n")), 2);
  // A model too big for the chip's memory leaves no KV cache.
  EXPECT_EQ(status(temp_file("big.yaml", "model: llama3-70b\ndtype: bf16\nrequests:\n" + kGenerated)), 2);
}



// A study whose workload is a serve file sweeps serve files' keys and records serve metrics.
TEST(ServeSweep, AStudyOverAServeFileRecordsServeMetrics) {
  const auto file = serve_file("sweep", kGenerated);
  const auto study = temp_file("study.yaml", "workload: " + file + "\nhw: h100\ngrid:\n  workload.requests.rate: [5, 400]\n"
                                             "metrics: [completed, ttft_p99_s, tpot_p50_s, mean_batch]\n");
  const auto out = gpusim::testing::test_temp_path("sweep").string();
  std::filesystem::remove_all(out);
  const auto r = gpusim::testing::run_gpusim({"sweep", study, "--out", out});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream csv(out + "/results.csv");
  std::string header, slow, fast;
  std::getline(csv, header);
  std::getline(csv, slow);
  std::getline(csv, fast);
  EXPECT_EQ(header, "point,name,workload.requests.rate,completed,ttft_p99_s,tpot_p50_s,mean_batch");
  const auto cell = [](const std::string& line, int k) {
    std::stringstream ss(line);
    std::string c;
    for (int i = 0; i <= k; ++i) std::getline(ss, c, ',');
    return std::stod(c);
  };
  EXPECT_EQ(cell(slow, 3), 40);
  EXPECT_EQ(cell(fast, 3), 40);
  // Eighty times the arrival rate: bigger batches, and first tokens that wait longer.
  EXPECT_GT(cell(fast, 6), cell(slow, 6));
  EXPECT_GT(cell(fast, 4), cell(slow, 4));
  // A run metric is not a serve metric.
  const auto bad = temp_file("bad_study.yaml", "workload: " + file + "\nhw: h100\ngrid:\n  workload.requests.rate: [5]\n"
                                               "metrics: [total_us]\n");
  EXPECT_EQ(gpusim::testing::run_gpusim({"sweep", bad, "--out", out + "-bad"}).status, 2);
}

}  // namespace
}  // namespace gpusim::serve
