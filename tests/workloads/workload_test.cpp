#include "workloads/workload.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/temp_files.h"
#include "tests/workloads/config_error_matchers.h"
#include "workloads/plan_summary.h"

namespace gpusim::workloads {
namespace {

using gpusim::testing::expect_config_error;
using hw::DType;
using models::OpKind;

const std::filesystem::path kRepo = GPUSIM_REPO_DIR;
const std::filesystem::path kModelsDir = kRepo / "configs/models";
const std::filesystem::path kShipped = kRepo / "configs/workloads";
const std::filesystem::path kData = std::filesystem::path(GPUSIM_TEST_DATA_DIR) / "workloads";

Workload load(const std::string& name, const std::vector<WorkloadOverride>& overrides = {}) {
  return load_workload(kShipped / name, overrides, kModelsDir);
}

// Parses `text` as "w.yaml", with the test models (tests/data/workloads/models) as presets.
Workload parse(const std::string& text, const std::vector<WorkloadOverride>& overrides = {}) {
  return parse_workload(text, "w.yaml", overrides, kData / "models");
}

ConfigError parse_error(const std::string& text,
                        const std::vector<WorkloadOverride>& overrides = {}) {
  return expect_config_error([&] { parse(text, overrides); });
}

// A valid model workload on the tiny test model; line N is the N-th key.
std::string tiny_decode(const std::string& extra = "") {
  return "model: tiny\nphase: decode\nbatch: 4\nseq_len: 64\ndtype: bf16\n" + extra;
}

// ---- the shipped workloads

TEST(WorkloadTest, DefaultDecode) {
  const auto w = std::get<ModelWorkload>(load("decode.yaml"));
  EXPECT_EQ(w.name, "decode");
  EXPECT_EQ(w.model.name, "llama3-8b");
  EXPECT_EQ(w.phase, Phase::kDecode);
  EXPECT_EQ(w.batch, 16);
  EXPECT_EQ(w.seq_len, 1024);
  EXPECT_FALSE(w.output_len.has_value());
  EXPECT_EQ(w.dtype, DType::kBf16);
  EXPECT_EQ(w.lowering, Lowering::kHfEager);
  EXPECT_EQ(w.attention, Attention::kSdpa);
}

TEST(WorkloadTest, ShippedModelWorkloads) {
  const auto prefill = std::get<ModelWorkload>(load("prefill.yaml"));
  EXPECT_EQ(prefill.phase, Phase::kPrefill);
  EXPECT_EQ(prefill.batch, 1);
  EXPECT_EQ(prefill.seq_len, 2048);

  const auto generate = std::get<ModelWorkload>(load("generate.yaml"));
  EXPECT_EQ(generate.phase, Phase::kGenerate);
  EXPECT_EQ(generate.seq_len, 512);
  EXPECT_EQ(generate.output_len, 128);

  const auto ocr = std::get<ModelWorkload>(load("deepseek-ocr-decode.yaml"));
  EXPECT_EQ(ocr.model.name, "deepseek-ocr-decoder");
  EXPECT_EQ(ocr.phase, Phase::kDecode);
  EXPECT_EQ(ocr.batch, 1);
  EXPECT_EQ(ocr.dtype, DType::kBf16);

  const auto cs336 = std::get<ModelWorkload>(load("cs336-small-naive.yaml"));
  EXPECT_EQ(cs336.model.name, "cs336-small");
  EXPECT_EQ(cs336.phase, Phase::kPrefill);
  EXPECT_EQ(cs336.batch, 4);
  EXPECT_EQ(cs336.seq_len, 256);
  EXPECT_EQ(cs336.dtype, DType::kFp32);
  EXPECT_EQ(cs336.attention, Attention::kNaive);
}

TEST(WorkloadTest, DesignDocOpExample) {
  const auto w = std::get<OpWorkload>(load("ops.yaml"));
  EXPECT_EQ(w.name, "projection-and-norm");
  EXPECT_EQ(w.default_dtype, DType::kBf16);
  ASSERT_EQ(w.ops.size(), 8u);
  const OpKind kinds[] = {OpKind::kMatmul,     OpKind::kLinear,         OpKind::kSdpa,
                          OpKind::kSdpaDecode, OpKind::kNaiveAttention, OpKind::kAdd,
                          OpKind::kCast,       OpKind::kLayerNorm};
  for (std::size_t i = 0; i < w.ops.size(); ++i) {
    EXPECT_EQ(w.ops[i].op.kind(), kinds[i]) << i;
    EXPECT_EQ(w.ops[i].line, static_cast<int>(i) + 4) << i;
  }
  EXPECT_EQ(w.ops[0].op.as<models::MatmulShape>().K, 2048);
  EXPECT_FALSE(w.ops[1].op.as<models::LinearShape>().bias);
  EXPECT_TRUE(w.ops[2].op.as<models::SdpaShape>().causal);
  EXPECT_EQ(w.ops[3].op.as<models::SdpaDecodeShape>().Hkv, 8);
  EXPECT_EQ(w.ops[4].op.dtype(), DType::kFp32);  // its own dtype
  EXPECT_FALSE(w.ops[4].op.as<models::NaiveAttentionShape>().causal);
  EXPECT_EQ(w.ops[5].op.dtype(), DType::kBf16);  // the default
  EXPECT_EQ(w.ops[6].op.as<models::CastShape>().from, DType::kFp32);
  EXPECT_EQ(w.ops[6].op.dtype(), DType::kBf16);
  EXPECT_EQ(w.ops[7].op.as<models::RowShape>().R, 4096);
}

TEST(WorkloadTest, EveryShippedWorkloadLoads) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kShipped)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_workload(entry.path(), {}, kModelsDir));
    ++count;
  }
  EXPECT_GE(count, 6);
}

TEST(WorkloadTest, InlineModel) {
  const auto w =
      std::get<ModelWorkload>(load_workload(kData / "inline_model.yaml", {}, kModelsDir));
  EXPECT_EQ(w.name, "inline-test");
  EXPECT_EQ(w.model.name, "tiny-inline");
  EXPECT_EQ(w.model.norm, Norm::kLayerNorm);
  EXPECT_EQ(w.model.max_positions, 128);
  EXPECT_EQ(w.model.moe->dense_layers, 1);
  EXPECT_EQ(w.dtype, DType::kFp16);
}

// ---- bad op workloads

TEST(WorkloadTest, OpErrorNamesFileLineAndItem) {
  const auto file = kData / "bad_op_extent.yaml";
  const ConfigError e = expect_config_error([&] { load_workload(file, {}, kModelsDir); });
  EXPECT_EQ(e.file(), file.string());
  EXPECT_EQ(e.line(), 7);
  EXPECT_EQ(e.key(), "ops[3].K");
  EXPECT_NE(e.detail().find("out of range"), std::string::npos);
}

TEST(WorkloadTest, BadOps) {
  const std::string head = "dtype: bf16\nops:\n";
  ConfigError e = parse_error(head + "  - {op: conv2d, n: 4}\n");
  EXPECT_EQ(e.file(), "w.yaml");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.key(), "ops[0].op");
  EXPECT_NE(e.detail().find("matmul"), std::string::npos);  // lists the known ops

  e = parse_error(head + "  - {op: add, n: 4}\n  - {op: matmul, M: 2, N: 2, k: 2}\n");
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.key(), "ops[1].k");
  EXPECT_NE(e.detail().find("unknown key"), std::string::npos);

  e = parse_error(head + "  - op: matmul\n    M: 2\n    N: 2\n");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.key(), "ops[0].K");
  EXPECT_NE(e.detail().find("missing"), std::string::npos);

  e = parse_error(head + "  - {op: add, n: -4}\n");
  EXPECT_EQ(e.key(), "ops[0].n");
  e = parse_error(head + "  - {op: add, n: 4.5}\n");
  EXPECT_EQ(e.key(), "ops[0].n");
  e = parse_error(head + "  - {op: add, n: 4, dtype: bf32}\n");
  EXPECT_EQ(e.key(), "ops[0].dtype");
  EXPECT_NE(e.detail().find("fp32, tf32, fp16, bf16, fp8"), std::string::npos);
  e = parse_error(head + "  - {op: sdpa_decode, B: 1, Hq: 30, Hkv: 8, L: 64, D: 64}\n");
  EXPECT_EQ(e.key(), "ops[0].Hkv");
  e = parse_error(head + "  - {op: sdpa, B: 1, H: 2, S: 64, D: 64}\n");
  EXPECT_EQ(e.key(), "ops[0].causal");
  e = parse_error(head + "  - {op: cast, n: 4, from: fp32, to: bf16, dtype: bf16}\n");
  EXPECT_EQ(e.key(), "ops[0].dtype");
  e = parse_error(head + "  - {op: cast, n: 4, from: fp32, to: fp32}\n");
  EXPECT_EQ(e.key(), "ops[0].to");

  e = parse_error("ops:\n  - {op: add, n: 4}\n");
  EXPECT_EQ(e.key(), "ops[0].dtype");  // no dtype anywhere
  e = parse_error("dtype: bf16\nops: []\n");
  EXPECT_EQ(e.key(), "ops");
  e = parse_error("dtype: bf16\nops: {op: add}\n");
  EXPECT_EQ(e.key(), "ops");
  e = parse_error("dtype: bf16\nbatch: 4\nops:\n  - {op: add, n: 4}\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.key(), "batch");
}

TEST(WorkloadTest, OptionalOpFields) {
  const auto w = std::get<OpWorkload>(
      parse("ops:\n  - {op: linear, M: 1, N: 8, K: 8, bias: true, dtype: fp16}\n"
            "  - {op: naive_attention, B: 1, H: 2, S: 8, D: 4, causal: true, dtype: fp32}\n"));
  EXPECT_EQ(w.name, "w");
  EXPECT_FALSE(w.default_dtype.has_value());
  EXPECT_TRUE(w.ops[0].op.as<models::LinearShape>().bias);
  EXPECT_TRUE(w.ops[1].op.as<models::NaiveAttentionShape>().causal);
}

// ---- bad model workloads

TEST(WorkloadTest, TinyDecodeParses) {
  const auto w = std::get<ModelWorkload>(parse(tiny_decode()));
  EXPECT_EQ(w.model.name, "tiny");
  EXPECT_EQ(w.batch, 4);
}

TEST(WorkloadTest, BadModelWorkloads) {
  ConfigError e = parse_error(tiny_decode("batchsize: 4\n"));
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.key(), "batchsize");
  EXPECT_NE(e.detail().find("unknown key"), std::string::npos);

  e = parse_error("model: tiny\nphase: decode\nseq_len: 64\ndtype: bf16\n");
  EXPECT_EQ(e.line(), 1);
  EXPECT_EQ(e.key(), "batch");
  EXPECT_NE(e.detail().find("missing"), std::string::npos);

  e = parse_error("model: tiny\nphase: decode\nbatch: 0\nseq_len: 64\ndtype: bf16\n");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.key(), "batch");

  e = parse_error("model: tiny\nphase: decode\nbatch: [4]\nseq_len: 64\ndtype: bf16\n");
  EXPECT_EQ(e.key(), "batch");

  e = parse_error("model: tiny\nphase: finetune\nbatch: 4\nseq_len: 64\ndtype: bf16\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.key(), "phase");

  e = parse_error(tiny_decode("output_len: 8\n"));
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.key(), "output_len");

  e = parse_error("model: tiny\nphase: generate\nbatch: 4\nseq_len: 64\ndtype: bf16\n");
  EXPECT_EQ(e.key(), "output_len");

  e = parse_error(tiny_decode("lowering: tensorrt\n"));
  EXPECT_EQ(e.key(), "lowering");
  e = parse_error(tiny_decode("attention: flash\n"));
  EXPECT_EQ(e.key(), "attention");
}

// Without dtype: a Hugging Face config's torch_dtype (or dtype), else bf16; the workload says which.
TEST(WorkloadTest, DtypeDefaults) {
  const auto preset = std::get<ModelWorkload>(parse("model: tiny\nphase: decode\nbatch: 4\nseq_len: 64\n"));
  EXPECT_EQ(preset.dtype, DType::kBf16);
  EXPECT_EQ(preset.dtype_default, "gpusim's default");
  EXPECT_NE(describe_workload(preset).find("dtype bf16 (default: gpusim's default)"), std::string::npos)
      << describe_workload(preset);
  EXPECT_EQ(std::get<ModelWorkload>(parse(tiny_decode())).dtype_default, "");  // given

  const gpusim::testing::TempDir dir;
  nlohmann::json config = nlohmann::json::parse(
      gpusim::testing::read_file(kRepo / "validation/data/hf_configs/qwen2-7b_decode_b2_l512.json"));
  const auto workload = [&](const nlohmann::json& c, const std::string& extra = "") {
    dir.write("config.json", c.dump());
    return load_workload(dir.write("w.yaml", "hf_config: config.json\nphase: decode\nbatch: 1\nseq_len: 128\n" + extra),
                         {}, kModelsDir);
  };
  config.erase("dtype");
  config["torch_dtype"] = "float16";
  auto w = std::get<ModelWorkload>(workload(config));
  EXPECT_EQ(w.dtype, DType::kFp16);
  EXPECT_EQ(w.dtype_default, "torch_dtype of the hf_config");
  EXPECT_EQ(std::get<ModelWorkload>(workload(config, "dtype: bf16\n")).dtype, DType::kBf16);  // the file wins
  config.erase("torch_dtype");
  config["dtype"] = "float32";  // as newer transformers writes it
  w = std::get<ModelWorkload>(workload(config));
  EXPECT_EQ(w.dtype, DType::kFp32);
  EXPECT_EQ(w.dtype_default, "dtype of the hf_config");
  config.erase("dtype");  // a config without one: bf16
  EXPECT_EQ(std::get<ModelWorkload>(workload(config)).dtype_default, "gpusim's default");
  config["torch_dtype"] = "int8";
  const ConfigError e = expect_config_error([&] { workload(config); });
  EXPECT_EQ(e.key(), "dtype");
  EXPECT_NE(e.detail().find("torch_dtype 'int8' is not one gpusim runs"), std::string::npos) << e.detail();
}

TEST(WorkloadTest, ModelReferenceErrors) {
  ConfigError e = parse_error("model: llama9\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\n");
  EXPECT_EQ(e.file(), "w.yaml");
  EXPECT_EQ(e.line(), 1);
  EXPECT_EQ(e.key(), "model");
  EXPECT_NE(e.detail().find("tiny"), std::string::npos);  // lists the presets

  e = parse_error(
      "hf_config: llama/config.json\nphase: decode\nbatch: 1\nseq_len: 8\n"
      "dtype: bf16\n");
  EXPECT_EQ(e.line(), 1);
  EXPECT_EQ(e.key(), "hf_config");
  EXPECT_NE(e.detail().find("no such file: llama/config.json"), std::string::npos);

  // An error inside a preset names the preset's file.
  e = parse_error("model: broken\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\n");
  EXPECT_EQ(e.file(), (kData / "models/broken.yaml").string());
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.key(), "model.kv_heads");

  // Inline fields are checked where they are written.
  e = parse_error(
      "model:\n  layers: 2\n  d_model: 64\n  heads: 4\n  kv_heads: 3\n  d_ff: 8\n"
      "  vocab: 10\n  norm: rmsnorm\n  activation: swiglu\n  positions: rope\n"
      "phase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\n");
  EXPECT_EQ(e.file(), "w.yaml");
  EXPECT_EQ(e.line(), 5);
  EXPECT_EQ(e.key(), "model.kv_heads");

  e = parse_error("model: [tiny]\nphase: decode\nbatch: 1\nseq_len: 8\ndtype: bf16\n");
  EXPECT_EQ(e.key(), "model");
}

TEST(WorkloadTest, DocumentShapeErrors) {
  ConfigError e = parse_error("");
  EXPECT_EQ(e.file(), "w.yaml");
  e = parse_error("name: nothing\n");
  EXPECT_NE(e.detail().find("expected `ops:`"), std::string::npos);
  e = parse_error(tiny_decode("ops:\n  - {op: add, n: 4}\n"));
  EXPECT_EQ(e.key(), "ops");
  e = parse_error("model: tiny\nphase: decode: now\nbatch: 4\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(e.detail().find("malformed YAML"), std::string::npos);
}

TEST(WorkloadTest, LearnedPositionsBoundTheSequence) {
  const std::string gpt2 = "model: gpt2-small\nbatch: 1\ndtype: fp16\n";
  EXPECT_NO_THROW(load_workload(kData / "inline_model.yaml", {}, kModelsDir));
  ConfigError e = expect_config_error(
      [&] { parse_workload(gpt2 + "phase: prefill\nseq_len: 1025\n", "w.yaml", {}, kModelsDir); });
  EXPECT_EQ(e.key(), "seq_len");
  e = expect_config_error([&] {
    parse_workload(gpt2 + "phase: generate\nseq_len: 1000\noutput_len: 26\n", "w.yaml", {},
                   kModelsDir);
  });
  EXPECT_EQ(e.key(), "output_len");
  EXPECT_NO_THROW(parse_workload(gpt2 + "phase: generate\nseq_len: 1000\noutput_len: 25\n",
                                 "w.yaml", {}, kModelsDir));
}

// ---- overrides (`--set workload.KEY=VALUE`)

TEST(WorkloadOverrideTest, SetsTopLevelValues) {
  const auto w = std::get<ModelWorkload>(
      load("decode.yaml", {{"batch", "32"}, {"seq_len", "2048"}, {"attention", "naive"}}));
  EXPECT_EQ(w.batch, 32);
  EXPECT_EQ(w.seq_len, 2048);
  EXPECT_EQ(w.attention, Attention::kNaive);  // a key the file does not have

  const auto other = std::get<ModelWorkload>(load("decode.yaml", {{"model", "llama3-70b"}}));
  EXPECT_EQ(other.model.name, "llama3-70b");

  const auto gen =
      std::get<ModelWorkload>(load("decode.yaml", {{"phase", "generate"}, {"output_len", "16"}}));
  EXPECT_EQ(gen.phase, Phase::kGenerate);
  EXPECT_EQ(gen.output_len, 16);

  const auto ops = std::get<OpWorkload>(load("ops.yaml", {{"dtype", "fp16"}}));
  EXPECT_EQ(ops.ops[0].op.dtype(), DType::kFp16);
  EXPECT_EQ(ops.ops[4].op.dtype(), DType::kFp32);  // has its own
}

TEST(WorkloadOverrideTest, UnknownKeyIsACommandLineError) {
  const ConfigError e = expect_config_error([] { load("decode.yaml", {{"batchsize", "32"}}); });
  EXPECT_EQ(e.file(), "command line");
  EXPECT_EQ(e.line(), 0);
  EXPECT_EQ(e.key(), "workload.batchsize");
  EXPECT_NE(e.detail().find("unknown key"), std::string::npos);
}

TEST(WorkloadOverrideTest, BadValueIsACommandLineError) {
  ConfigError e = expect_config_error([] { load("decode.yaml", {{"batch", "abc"}}); });
  EXPECT_EQ(e.file(), "command line");
  EXPECT_EQ(e.line(), 0);
  EXPECT_EQ(e.key(), "workload.batch");
  EXPECT_NE(e.detail().find("'abc' is not a whole number"), std::string::npos);

  e = expect_config_error([] { load("decode.yaml", {{"batch", "0"}}); });
  EXPECT_EQ(e.file(), "command line");
  e = expect_config_error([] { load("decode.yaml", {{"dtype", "int4"}}); });
  EXPECT_EQ(e.key(), "workload.dtype");
  e = expect_config_error([] { load("decode.yaml", {{"model", "llama9"}}); });
  EXPECT_EQ(e.file(), "command line");
  EXPECT_EQ(e.key(), "workload.model");
  e = expect_config_error([] { load("decode.yaml", {{"output_len", "8"}}); });
  EXPECT_EQ(e.file(), "command line");
  EXPECT_EQ(e.key(), "workload.output_len");
}

TEST(WorkloadOverrideTest, NestedKeysOfInlineModels) {
  const auto file = kData / "inline_model.yaml";
  const auto w = std::get<ModelWorkload>(
      load_workload(file, {{"model.layers", "4"}, {"model.moe.top_k", "3"}}, kModelsDir));
  EXPECT_EQ(w.model.layers, 4);
  EXPECT_EQ(w.model.moe->top_k, 3);

  ConfigError e = expect_config_error([&] {
    load_workload(file, {{"model.moe.top_k", "5"}}, kModelsDir);
  });
  EXPECT_EQ(e.file(), "command line");
  EXPECT_EQ(e.key(), "workload.model.moe.top_k");
  e = expect_config_error([&] { load_workload(file, {{"model.bogus", "1"}}, kModelsDir); });
  EXPECT_EQ(e.file(), "command line");
  EXPECT_EQ(e.key(), "workload.model.bogus");
}

TEST(WorkloadOverrideTest, PathsThroughNonMappingsAreRefused) {
  ConfigError e = expect_config_error([] { load("decode.yaml", {{"model.layers", "4"}}); });
  EXPECT_EQ(e.file(), "command line");
  EXPECT_EQ(e.key(), "workload.model.layers");
  EXPECT_NE(e.detail().find("is 'llama3-8b' in the workload file, not a mapping"),
            std::string::npos);

  e = expect_config_error([] { load("decode.yaml", {{"hw.sm_count", "4"}}); });
  EXPECT_EQ(e.key(), "workload.hw.sm_count");
  // List items are reached by index (ops[0].M); a missing item or a list used as a mapping is not.
  e = expect_config_error([] { load("ops.yaml", {{"ops[99].M", "4"}}); });
  EXPECT_EQ(e.file(), "command line");
  EXPECT_EQ(e.key(), "workload.ops[99].M");
  EXPECT_NE(e.detail().find("no list item workload.ops[99]"), std::string::npos) << e.detail();
  e = expect_config_error([] { load("ops.yaml", {{"ops.M", "4"}}); });
  EXPECT_NE(e.detail().find("a list"), std::string::npos) << e.detail();
  e = expect_config_error([] { load("ops.yaml", {{"ops[x].M", "4"}}); });
  EXPECT_EQ(e.key(), "workload.ops[x].M");
  e = expect_config_error([] { load("decode.yaml", {{"", "4"}}); });
  EXPECT_EQ(e.key(), "workload.");
}

TEST(WorkloadOverrideTest, ListItemsByIndex) {
  const auto w = std::get<OpWorkload>(load("ops.yaml", {{"ops[0].M", "4"}}));
  const auto plain = std::get<OpWorkload>(load("ops.yaml", {}));
  EXPECT_NE(models::describe(w.ops[0].op), models::describe(plain.ops[0].op));
  EXPECT_NE(models::describe(w.ops[0].op).find("M=4"), std::string::npos) << models::describe(w.ops[0].op);
  EXPECT_EQ(models::describe(w.ops[1].op), models::describe(plain.ops[1].op));
  // A value the op reader rejects is blamed on the override.
  const ConfigError e = expect_config_error([] { load("ops.yaml", {{"ops[0].M", "-4"}}); });
  EXPECT_EQ(e.file(), "command line");
  EXPECT_EQ(e.key(), "workload.ops[0].M");
}

TEST(WorkloadOverrideTest, FileErrorsStayOnTheFile) {
  const auto file = kData / "bad_op_extent.yaml";
  const ConfigError e = expect_config_error([&] {
    load_workload(file, {{"dtype", "fp16"}}, kModelsDir);
  });
  EXPECT_EQ(e.file(), file.string());
  EXPECT_EQ(e.key(), "ops[3].K");
}

}  // namespace
}  // namespace gpusim::workloads
