#include "workloads/plan_summary.h"

#include <fmt/format.h>

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
    out += "\n";
  }
  return out;
}

std::string describe_model(const ModelWorkload& w) {
  std::string out = fmt::format("workload {}: {} {}, batch {}, {}\n", w.name, w.model.name,
                                name(w.phase), w.batch, sequence_text(w));
  out += fmt::format("  dtype {}, lowering {}, attention {}\n", hw::name(w.dtype), name(w.lowering),
                     name(w.attention));
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
