// Reads a Hugging Face transformers config.json into a ModelConfig, for model-level workloads
// that name one (`hf_config: path/config.json`).
//
// Model types read: llama, mistral, qwen2, mixtral, gpt2, deepseek_v2 (with multi-head latent
// attention, or without when kv_lora_rank is null), deepseek_v3, qwen3, qwen3_moe, gemma2,
// gemma3_text, gemma3 (its language model, under `text_config`), phi3, and deepseek_vl_v2
// files such as DeepSeek-OCR's, whose language model (deepseek_v2) is under `language_config`.
// Each family's reader is one file, workloads/hf_<family>.cpp, registered in hf_config.cpp.
//
// The sizes that shape a model (hidden_size, intermediate_size, num_hidden_layers,
// num_attention_heads, vocab_size; GPT-2's n_embd, n_layer, n_head, vocab_size) must be written;
// save_pretrained writes them all. Other fields a file leaves out take the defaults of
// transformers 5.17's config classes, as from_pretrained would. Errors are ConfigErrors naming
// the file, the key path (`language_config.num_attention_heads`) and the line the key is on.
#pragma once

#include <filesystem>
#include <string>

#include "workloads/model_config.h"

namespace gpusim::workloads {

// Reads a config.json. The model is named after the file's stem, or after its folder when the
// stem is "config" (models/llama3-8b/config.json is llama3-8b).
ModelConfig load_hf_config(const std::filesystem::path& file);

// The same for text already in memory; `label` names it in errors.
ModelConfig parse_hf_config(const std::string& json_text, const std::string& label,
                            const std::string& default_name);

}  // namespace gpusim::workloads
