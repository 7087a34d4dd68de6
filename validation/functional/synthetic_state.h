// Deterministic stand-ins for what a model step reads but does not compute: weights and cached
// keys/values generated from their tensor names, and the token ids of the prompt. The DAG
// interpreter and the reference forward pass share them, so both run the same model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpusim::functional {

// Element `i` of the tensor called `name`: uniform noise seeded by a hash of (name, i), scaled
// by kind: norm weights 1 +- 0.1, the embedding +-1, cached keys/values +-0.5, other weights
// (linear layers) +-0.3.
float synthetic_value(const std::string& name, std::int64_t i);
std::vector<float> synthetic_tensor(const std::string& name, std::int64_t n);

// The token at `position` of sequence `b`.
std::int64_t synthetic_token(std::int64_t b, std::int64_t position, std::int64_t vocab);

}  // namespace gpusim::functional
