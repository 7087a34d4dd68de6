#include "workloads/memory_footprint.h"

#include <algorithm>

#include "workloads/parameter_count.h"

namespace gpusim::workloads {

namespace {

// What one GPU holds: `w` is the whole workload on one GPU, or one GPU's share of it (rank_shard).
MemoryFootprint gpu_footprint(const ModelWorkload& w, double activation_peak_bytes, const hw::HardwareSpec& hw) {
  MemoryFootprint f;
  f.gpus = w.parallel.gpus();
  const ModelConfig& m = w.model;
  // tf32 is stored as fp32; fp8 keeps weights and the cache in 1 byte per element.
  const auto bytes = static_cast<std::int64_t>(hw::bytes_per_element(w.dtype));
  f.weights_bytes = stage_parameter_count(m, w.first_stage(), w.last_stage()) * bytes;
  // The cache holds the prompt plus every token fed back: decode ends with seq_len + 1 tokens,
  // generate with seq_len + output_len - 1 (the last sampled token is never fed back).
  switch (w.phase) {
    case Phase::kPrefill: f.kv_cache_tokens = w.seq_len; break;
    case Phase::kDecode: f.kv_cache_tokens = w.seq_len + 1; break;
    case Phase::kGenerate: f.kv_cache_tokens = w.seq_len + w.output_len.value_or(1) - 1; break;
    // transformers' DynamicCache, in training too, unless gradient checkpointing turns it off.
    case Phase::kTrain: f.kv_cache_tokens = w.checkpointing == Checkpointing::kFull ? 0 : w.seq_len; break;
  }
  // cs336_basics keeps no cache: its K and V are activations of the forward.
  if (w.lowering == Lowering::kCs336Basics) f.kv_cache_tokens = 0;
  // The cache is stored like the activations: bf16 when the GEMMs run in fp8.
  const std::int64_t cache_bytes = w.dtype == hw::DType::kFp8 ? 2 : bytes;
  // Per layer: K and V of every KV head; MLA keeps the latent and the rotated shared key instead
  // (transformers 5.x caches them too); a windowed layer keeps its window (transformers: the last
  // window - 1 tokens between steps).
  const std::int64_t per_token = m.mla ? m.mla->kv_lora_rank + m.mla->qk_rope_head_dim : 2 * m.kv_heads * m.head_dim;
  for (std::int64_t i = 0; i < m.layers; ++i) {
    std::int64_t tokens = f.kv_cache_tokens;
    if (m.sliding_layer(i)) {
      tokens = std::min(tokens, w.lowering == Lowering::kHfEager ? *m.sliding_window - 1 : *m.sliding_window);
    }
    f.kv_cache_bytes += w.batch * tokens * per_token * cache_bytes;
  }
  f.activation_peak_bytes = static_cast<std::int64_t>(activation_peak_bytes);
  if (w.phase == Phase::kTrain) {
    // Moments and momentum are kept in the parameters' dtype (torch.optim's default).
    f.gradients_bytes = f.weights_bytes;
    const int moments = w.optimizer == Optimizer::kNone ? 0 : w.optimizer == Optimizer::kSgd ? 1 : 2;
    f.optimizer_state_bytes = moments * f.weights_bytes;
  }
  f.total_bytes = f.weights_bytes + f.kv_cache_bytes + f.optimizer_state_bytes + f.activation_peak_bytes;
  f.capacity_bytes = hw.dram.capacity;
  f.fits = f.total_bytes <= f.capacity_bytes;
  return f;
}

}  // namespace

MemoryFootprint memory_footprint(const ModelWorkload& whole, double activation_peak_bytes,
                                 const hw::HardwareSpec& hw) {
  if (!whole.parallel.any() || whole.rank_view) return gpu_footprint(whole, activation_peak_bytes, hw);
  // Several GPUs: what one of them holds (its share of the weights, heads and batch); with
  // pipeline stages, the stage that holds most.
  MemoryFootprint most;
  for (int stage = 0; stage < whole.parallel.pipeline; ++stage) {
    ModelWorkload shard = rank_shard(whole, stage);
    // The cache and activations of every micro-batch in flight (rank_shard sizes one).
    shard.batch *= shard.parallel.micro_batches;
    const MemoryFootprint f = gpu_footprint(shard, activation_peak_bytes, hw);
    if (stage == 0 || f.total_bytes > most.total_bytes) most = f;
  }
  return most;
}

}  // namespace gpusim::workloads
