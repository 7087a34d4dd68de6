// The kernel DAG of an hf-eager step is a correct transformer: run functionally, vertex by
// vertex in topological order (validation/functional/dag_interpreter.h), a tiny dense and a
// tiny MoE model give the logits of a plain reference forward pass with the same weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>

#include "models/kernel_model.h"
#include "tests/functional/functional_test_support.h"
#include "validation/functional/dag_interpreter.h"
#include "validation/functional/reference_transformer.h"
#include "workloads/transformer_phases.h"

namespace gpusim::functional {
namespace {

using testing::h100;
using workloads::ModelConfig;
using workloads::ModelWorkload;
using workloads::Phase;

constexpr std::int64_t kBatch = 2, kPrompt = 5;

ModelConfig tiny_dense() {
  ModelConfig m;
  m.name = "tiny-dense";
  m.layers = 2;
  m.d_model = 32;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 8;
  m.d_ff = 48;
  m.vocab = 50;
  m.norm_eps = 1e-5;
  m.rope_theta = 10000;
  return m;
}

// The first layer dense, the second 4 experts (top 2, renormalized) and a shared expert; the
// head tied to the embedding.
ModelConfig tiny_moe() {
  ModelConfig m = tiny_dense();
  m.name = "tiny-moe";
  m.tied_embeddings = true;
  workloads::MoeConfig moe;
  moe.experts = 4;
  moe.top_k = 2;
  moe.expert_d_ff = 16;
  moe.shared_experts = 1;
  moe.shared_expert_d_ff = 24;
  moe.dense_layers = 1;
  moe.norm_topk_prob = true;
  m.moe = moe;
  return m;
}

// The one step of a prefill (of the prompt) or decode (of one token after it) workload.
workloads::StepProgram step(const ModelConfig& m, Phase phase, hw::DType dtype) {
  ModelWorkload w;
  w.name = m.name;
  w.model = m;
  w.phase = phase;
  w.batch = kBatch;
  w.seq_len = kPrompt;
  w.dtype = dtype;
  auto steps = workloads::build_steps(w, h100(), models::default_kernel_models());
  EXPECT_EQ(steps.size(), 1u);
  return std::move(steps.at(0));
}

// Prefill's grown caches ("<layer>.attn.k.cache_new") as decode's past ("....cache").
TensorMap caches_of(const TensorMap& prefill) {
  const std::string suffix = "_new";
  TensorMap past;
  for (const auto& [name, t] : prefill) {
    if (name.size() > suffix.size() && name.ends_with(".cache" + suffix)) past[name.substr(0, name.size() - suffix.size())] = t;
  }
  return past;
}

const Tensor& logits(const TensorMap& run, const workloads::StepProgram& s) {
  const auto& g = s.dag;
  return run.at(g[s.dag.size() - 1].semantics.value().output);
}

struct Case {
  std::string name;
  ModelConfig model;
  hw::DType dtype;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class FunctionalDag : public ::testing::TestWithParam<Case> {};

TEST_P(FunctionalDag, PrefillLogitsMatchTheReference) {
  const auto& c = GetParam();
  const auto prefill = step(c.model, Phase::kPrefill, c.dtype);
  const TensorMap run = run_dag(prefill.dag);
  const Tensor& out = logits(run, prefill);
  ASSERT_EQ(out.numel(), kBatch * c.model.vocab);
  EXPECT_LT(relative_error(out, reference_logits(c.model, kBatch, kPrompt)), testing::kFp32Tolerance);
}

TEST_P(FunctionalDag, DecodeAgainstThePrefillCacheMatchesTheReference) {
  const auto& c = GetParam();
  const auto prefill = step(c.model, Phase::kPrefill, c.dtype);
  const auto decode = step(c.model, Phase::kDecode, c.dtype);
  ASSERT_EQ(decode.shape.past_tokens, kPrompt);
  const TensorMap past = caches_of(run_dag(prefill.dag));
  ASSERT_EQ(past.size(), 2u * static_cast<std::size_t>(c.model.layers));
  const auto ref = reference_logits(c.model, kBatch, kPrompt + 1);
  const TensorMap run = run_dag(decode.dag, past);
  const Tensor& out = logits(run, decode);
  EXPECT_LT(relative_error(out, ref), testing::kFp32Tolerance);
  // The cache matters: against synthetic caches instead, the logits are different.
  const TensorMap fresh = run_dag(decode.dag);
  const Tensor& other = logits(fresh, decode);
  EXPECT_GT(relative_error(other, ref), 1e-2);
}

INSTANTIATE_TEST_SUITE_P(Functional, FunctionalDag,
                         ::testing::Values(Case{"DenseFp32", tiny_dense(), hw::DType::kFp32},
                                           Case{"MoeFp32", tiny_moe(), hw::DType::kFp32},
                                           Case{"DenseBf16", tiny_dense(), hw::DType::kBf16},
                                           Case{"MoeBf16", tiny_moe(), hw::DType::kBf16}),
                         [](const auto& info) { return info.param.name; });

// Semantics sit on one launch per op, its last: split-K partials and memsets have none.
TEST(FunctionalDagSemantics, OnlyOnTheLastLaunchOfAnOp) {
  const auto s = step(tiny_moe(), Phase::kPrefill, hw::DType::kBf16);
  const auto& g = s.dag;
  std::size_t with = 0;
  for (std::size_t v = 0; v < s.dag.size(); ++v) {
    if (!g[v].semantics) continue;
    ++with;
    const bool last = v + 1 == s.dag.size() || g[v + 1].op != g[v].op || g[v + 1].semantics;
    EXPECT_TRUE(last) << g[v].op;
    const auto& writes = g[v].launch.writes;
    EXPECT_TRUE(std::any_of(writes.begin(), writes.end(), [&](const auto& w) { return w.tensor == g[v].semantics->output; }))
        << g[v].op << " does not write " << g[v].semantics->output;
  }
  EXPECT_GT(with, s.dag.size() / 2);
}

}  // namespace
}  // namespace gpusim::functional
