#include "workloads/plan_summary.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "workloads/parameter_count.h"

namespace gpusim::workloads {
namespace {

std::string describe_ops(const OpWorkload& w) {
  std::string out =
      fmt::format("workload {}: {} op{}\n", w.name, w.ops.size(), w.ops.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < w.ops.size(); ++i) {
    out += fmt::format("  {}. {}\n", i + 1, models::describe(w.ops[i].op));
  }
  return out;
}

std::string sequence_text(const ModelWorkload& w) {
  switch (w.phase) {
    case Phase::kPrefill:
      return fmt::format("prompt length {}", w.seq_len);
    case Phase::kDecode:
      return fmt::format("KV length {} (one new token per sequence)", w.seq_len);
    case Phase::kGenerate:
      return fmt::format("prompt length {}, then {} output tokens", w.seq_len,
                         w.output_len.value_or(0));
    case Phase::kTrain: {
      std::string extras = w.optimizer == Optimizer::kNone ? "forward and backward only"
                                                          : fmt::format("{} optimizer", name(w.optimizer));
      if (w.autocast) extras += fmt::format(", fp32 weights under {} autocast", hw::name(*w.autocast));
      if (w.checkpointing == Checkpointing::kFull) extras += ", full activation checkpointing";
      if (w.accumulation_steps > 1) extras += fmt::format(", {} micro-batches accumulated", w.accumulation_steps);
      return fmt::format("one training step over sequences of {} tokens ({})", w.seq_len, extras);
    }
  }
  return {};
}

std::string biases_text(const ModelConfig& m) {
  std::string out;
  const auto add = [&out](bool on, const char* what) {
    if (on) out += (out.empty() ? "" : ", ") + std::string(what);
  };
  add(m.qkv_bias, "qkv");
  add(m.attn_out_bias, "attention output");
  add(m.mlp_bias, "mlp");
  return out.empty() ? "no biases" : "biases on " + out;
}

// Joins the non-empty parts with ", ".
std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : ", ") + part;
  return out;
}

// How the workload splits over GPUs (workloads/parallelism.h).
std::string parallel_text(const Parallelism& p) {
  std::vector<std::string> parts;
  if (p.tensor > 1) parts.push_back(fmt::format("tensor parallel {}", p.tensor));
  if (p.expert > 1) parts.push_back(fmt::format("expert parallel {}", p.expert));
  if (p.pipeline > 1) parts.push_back(fmt::format("pipeline parallel {} ({} micro-batch{})", p.pipeline, p.micro_batches,
                                                  p.micro_batches == 1 ? "" : "es"));
  if (p.data > 1) parts.push_back(fmt::format("data parallel {}", p.data));
  return fmt::format("  {} GPUs: {}\n", p.gpus(), joined(parts));
}


// This year's features (issue 13), when a model has any: empty otherwise.
std::string features_text(const ModelConfig& m) {
  std::vector<std::string> parts;
  if (m.qk_norm) parts.emplace_back("qk-norm");
  if (m.fused_qkv) parts.emplace_back("fused qkv_proj");
  if (m.fused_gate_up) parts.emplace_back("fused gate_up_proj");
  if (m.rotary_fraction != 1.0) {
    const auto dims =
        static_cast<std::int64_t>(static_cast<double>(m.head_dim) * m.rotary_fraction);
    parts.push_back(
        fmt::format("partial RoPE {} ({} of {} dims)", m.rotary_fraction, dims, m.head_dim));
  }
  if (m.rope_scaling != "default") parts.push_back(fmt::format("{} RoPE scaling", m.rope_scaling));
  if (m.sliding_window) {
    std::int64_t windowed = 0;
    for (std::int64_t i = 0; i < m.layers; ++i) windowed += m.sliding_layer(i) ? 1 : 0;
    parts.push_back(windowed == m.layers ? fmt::format("sliding window {} on all {} layers",
                                                       *m.sliding_window, m.layers)
                                         : fmt::format("sliding window {} on {} of {} layers",
                                                       *m.sliding_window, windowed, m.layers));
  }
  if (m.rope_local_theta) parts.push_back(fmt::format("local RoPE theta {}", *m.rope_local_theta));
  if (m.query_scale) parts.push_back(fmt::format("query scale {}^-0.5", *m.query_scale));
  if (m.attn_softcap) parts.push_back(fmt::format("attention soft-cap {}", *m.attn_softcap));
  if (m.final_softcap) parts.push_back(fmt::format("final logit soft-cap {}", *m.final_softcap));
  if (m.norm_weight_offset) parts.emplace_back("norms scale by (1 + weight)");
  if (m.sandwich_norms) parts.emplace_back("sandwich norms");
  if (m.embed_scale) parts.emplace_back("embeddings x sqrt(d_model)");
  return parts.empty() ? "" : "  " + joined(parts) + "\n";
}

std::string mla_text(const MlaConfig& mla) {
  return fmt::format(
      "  MLA: {}, kv_lora_rank {}, qk_nope {} + qk_rope {}, v {}{}\n",
      mla.q_lora_rank > 0 ? fmt::format("q_lora_rank {}", mla.q_lora_rank) : "q projected directly",
      mla.kv_lora_rank, mla.qk_nope_head_dim, mla.qk_rope_head_dim, mla.v_head_dim,
      mla.rope_interleave ? ", interleaved RoPE" : "");
}

// Where MoE layers are and how tokens are routed, when it differs from the defaults.
std::string moe_placement_and_routing(const ModelConfig& m, const MoeConfig& moe) {
  std::string out;
  if (moe.every != 1 || !moe.dense_list.empty()) {
    std::int64_t n = 0;
    for (std::int64_t i = 0; i < m.layers; ++i) n += m.moe_layer(i) ? 1 : 0;
    out += fmt::format("; MoE on {} of {} layers (i % {} == {}", n, m.layers, moe.every, moe.phase);
    if (!moe.dense_list.empty()) {
      std::vector<std::string> listed;
      for (const auto i : moe.dense_list) listed.push_back(std::to_string(i));
      out += fmt::format(", dense: {}", joined(listed));
    }
    out += ")";
  }
  const bool grouped = moe.topk_method != TopkMethod::kGreedy;
  if (moe.scoring != RouterScoring::kSoftmax || grouped || moe.routed_scaling != 1.0 ||
      moe.router_fp32) {
    out += fmt::format("; {} router{}, {} top-k", name(moe.scoring),
                       moe.router_fp32 ? " in fp32" : "", name(moe.topk_method));
    if (grouped) out += fmt::format(" ({} of {} groups)", moe.topk_groups, moe.groups);
    if (moe.routed_scaling != 1.0) out += fmt::format(", weights x {}", moe.routed_scaling);
  }
  return out;
}

std::string architecture_text(const ModelConfig& m) {
  std::string out =
      fmt::format("  model {}: {} layers, d_model {}, {} heads / {} KV heads of dim {}", m.name,
                  m.layers, m.d_model, m.heads, m.kv_heads, m.head_dim);
  if (m.d_ff > 0) out += fmt::format(", d_ff {}", m.d_ff);
  out += fmt::format(", vocab {}\n", m.vocab);

  out += fmt::format("  {}", name(m.norm));
  if (m.norm_eps) out += fmt::format(" (eps {})", *m.norm_eps);
  out += fmt::format(", {}, {} positions", name(m.activation), name(m.positions));
  if (m.max_positions) out += fmt::format(" ({})", *m.max_positions);
  if (m.rope_theta) out += fmt::format(" (theta {})", *m.rope_theta);
  out +=
      fmt::format(", {}, {} embeddings\n", biases_text(m), m.tied_embeddings ? "tied" : "untied");
  out += features_text(m);
  if (m.mla) out += mla_text(*m.mla);

  if (m.moe) {
    const MoeConfig& moe = *m.moe;
    out += fmt::format("  MoE: {} experts of d_ff {}, top-{}", moe.experts, moe.expert_d_ff,
                       moe.top_k);
    if (moe.shared_experts > 0) {
      out += fmt::format(", plus {} shared expert{} of d_ff {}", moe.shared_experts,
                         moe.shared_experts == 1 ? "" : "s", moe.shared_expert_d_ff);
    }
    if (moe.dense_layers > 0) {
      out += fmt::format("; the first {} layer{} dense", moe.dense_layers,
                         moe.dense_layers == 1 ? " is" : "s are");
    }
    out += moe_placement_and_routing(m, moe);
    out += "\n";
  }
  return out;
}

std::string describe_model(const ModelWorkload& w) {
  std::string out = fmt::format("workload {}: {} {}, batch {}, {}\n", w.name, w.model.name,
                                name(w.phase), w.batch, sequence_text(w));
  out += fmt::format("  dtype {}{}, lowering {}, attention {}\n", hw::name(w.dtype),
                     w.dtype_default.empty() ? "" : fmt::format(" (default: {})", w.dtype_default), name(w.lowering),
                     w.lowering == Lowering::kCs336Basics ? "written out (cs336_basics)" : name(w.attention));
  if (w.model.moe && w.lowering == Lowering::kHfEager) out += fmt::format("  MoE experts: {}\n", name(w.moe));
  if (w.model.moe) {
    const bool even = w.expert_weights.empty();
    out += w.layer_expert_weights.empty()
               ? fmt::format("  MoE routing: {}\n",
                             even ? "balanced (top-k pairs over E (1 - (1 - k/E)^T) experts)"
                                  : "expert_weights")
               : fmt::format("  MoE routing: a trace for {} of the MoE layers "
                             "(expert_weights_by_layer), {} elsewhere\n",
                             w.layer_expert_weights.size(), even ? "balanced" : "expert_weights");
  }
  if (w.parallel.any()) out += parallel_text(w.parallel);
  out += architecture_text(w.model);
  const std::int64_t params = parameter_count(w.model);
  const double bytes = static_cast<double>(params) * hw::bytes_per_element(w.dtype);
  out += fmt::format("  {:.3f} B parameters ({}), weights {:.2f} GB ({:.2f} GiB) at {}\n",
                     params / 1e9, params, bytes / 1e9, bytes / (1024.0 * 1024 * 1024),
                     hw::name(w.dtype));
  return out;
}

}  // namespace

std::string describe_workload(const Workload& workload) {
  if (const auto* ops = std::get_if<OpWorkload>(&workload)) return describe_ops(*ops);
  return describe_model(std::get<ModelWorkload>(workload));
}

}  // namespace gpusim::workloads
