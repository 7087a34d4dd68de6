#include "validation/tp_published_suite.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "sim/error.h"
#include "validation/case_json.h"
#include "workloads/model_config.h"
#include "workloads/model_run.h"
#include "workloads/parallelism.h"

namespace gpusim::validation {
namespace {

// What gpusim runs for one entry and how its figure is read off the run.
struct Setup {
  workloads::Phase phase = workloads::Phase::kDecode;
  std::int64_t batch = 1, seq_len = 0, output_len = 0;
  double measured_us = 0;  // the entry's figure as a time
  std::string approximation;  // empty: the entry's setup as published
};

std::string text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump(); }

// The first `n` bytes of a UTF-8 text, not cutting a character.
std::string prefix(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "...";
}

// The entry's setup, or a reason it cannot be simulated (returned through `why`).
std::optional<Setup> setup_of(const nlohmann::json& e, std::string& why) {
  const std::string metric = e.at("metric").get<std::string>();
  const double value = e.at("value").get<double>();
  Setup s;
  if (metric.starts_with("tpot_ms")) {
    // vLLM benchmark_serving, 10 ShareGPT prompts at once: concurrency falls from 10 as requests
    // finish and lengths vary (prompts 137 tokens on average, outputs unknown). One decode step at
    // batch 10 over 512 cached tokens stands in; a 70B decode step streams its weights, so the
    // cache length moves it little.
    s.batch = 10;
    s.seq_len = 512;
    s.measured_us = value * 1e3;
    s.approximation = "approx: batch 10, KV 512 for a shrinking ShareGPT mix";
    return s;
  }
  if (metric == "itl_ms") {
    // One request: the mean decode step over its output is the step at the mean cache length.
    s.batch = 1;
    s.seq_len = e.at("input_len").get<std::int64_t>() + e.at("output_len").get<std::int64_t>() / 2;
    s.measured_us = value * 1e3;
    return s;
  }
  if (metric == "ttft_ms") {
    s.phase = workloads::Phase::kPrefill;
    s.batch = e.at("batch").get<std::int64_t>();
    s.seq_len = e.at("input_len").get<std::int64_t>();
    s.measured_us = value * 1e3;
    s.approximation = "prefill as one CUDA graph; TensorRT-LLM v0.5's kernels are not gpusim's fused ones";
    return s;
  }
  if (metric == "throughput_tok_s" || metric.starts_with("e2e_latency_ms")) {
    s.phase = workloads::Phase::kGenerate;
    s.batch = e.at("batch").get<std::int64_t>();
    s.seq_len = e.at("input_len").get<std::int64_t>();
    s.output_len = e.at("output_len").get<std::int64_t>();
    if (metric == "throughput_tok_s") {
      // tokens/s = batch x output tokens / time: compared as the time of one static batch.
      s.measured_us = static_cast<double>(s.batch * s.output_len) / value * 1e6;
      s.approximation = "approx: one static batch; trtllm-bench's request count and in-flight batching not reproduced";
    } else {
      s.measured_us = value * 1e3;
    }
    return s;
  }
  why = "metric " + metric + " has no gpusim counterpart";
  return std::nullopt;
}

}  // namespace

PublishedTpComparison compare_published_tp(const std::filesystem::path& json, const std::filesystem::path& models_dir,
                                           const hw::HardwareSpec& h100_system, const hw::HardwareSpec& h200_system,
                                           const models::KernelModelRegistry& models) {
  const nlohmann::json doc = read_json_file(json);
  PublishedTpComparison out;
  try {
    for (const auto& e : doc.at("tp_decode")) {
      const std::string gpu = text(e.at("gpu"));
      const std::string title = e.at("source").at("title").get<std::string>();
      const int tp = e.at("tp").get<int>();
      const std::string precision_word = text(e.at("precision")).substr(0, text(e.at("precision")).find(' '));
      const std::string name = fmt::format("{} TP{} {} {} = {} ({})", text(e.at("model")), tp,
                                           precision_word.empty() ? "bf16" : precision_word,
                                           e.at("metric").get<std::string>(), text(e.at("value")), prefix(title, 48));
      std::string why;
      auto setup = setup_of(e, why);
      const bool h200 = gpu.find("H200") != std::string::npos;
      if (!h200 && gpu.find("H100") == std::string::npos) why = gpu + ": gpusim has no system preset of these GPUs";
      if (!why.empty() || !setup) {
        out.not_simulated.push_back(name + ": " + why);
        continue;
      }
      // 70B Llama models of one shape: Llama 2's vocabulary is 32,000 (the lm_head of one token).
      const std::string model = text(e.at("model"));
      workloads::ModelWorkload w;
      w.model = workloads::load_model_file(*workloads::find_model_preset("llama3-70b", models_dir));
      if (model == "llama2-70b") w.model.vocab = 32000;
      w.name = model;
      w.phase = setup->phase;
      w.batch = setup->batch;
      w.seq_len = setup->seq_len;
      if (setup->phase == workloads::Phase::kGenerate) w.output_len = setup->output_len;
      const std::string precision = text(e.at("precision"));
      w.dtype = precision.starts_with("fp8") ? hw::DType::kFp8 : hw::DType::kBf16;
      std::string approximation = setup->approximation;
      if (precision.empty()) approximation += std::string(approximation.empty() ? "" : "; ") + "precision not stated: bf16";
      w.lowering = workloads::Lowering::kFused;
      w.parallel.tensor = tp;
      const hw::HardwareSpec& hw = h200 ? h200_system : h100_system;
      workloads::check_parallel_system(w, hw);
      const workloads::ModelRun run = workloads::simulate_model(w, hw, hw::LaunchMode::kGraph, models);
      double simulated = 0;
      for (const auto& step : run.steps) simulated += step.total_us;
      const std::string label = fmt::format("{}: {} b={} in={}{} on {}{}", name,
                                            setup->phase == workloads::Phase::kPrefill ? "prefill"
                                            : setup->phase == workloads::Phase::kDecode ? "decode step"
                                                                                       : "generate",
                                            w.batch, w.seq_len, w.output_len ? fmt::format(" out={}", *w.output_len) : "",
                                            hw.name, approximation.empty() ? "" : " [" + approximation + "]");
      out.rows.push_back(figure_row(label, fmt::format("TP{} {}", tp, e.at("metric").get<std::string>()), true,
                                    setup->measured_us, simulated));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(json.string(), 0, "tp_decode", std::string("malformed: ") + e.what());
  }
  return out;
}

}  // namespace gpusim::validation
