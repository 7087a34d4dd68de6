// Numeric formats of weights, activations and kernel math.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpusim::hw {

enum class DType {
  kFp32,  // fp32 storage, SIMT (CUDA-core) math
  kTf32,  // fp32 storage, tensor-core math with a 10-bit mantissa
  kFp16,
  kBf16,
  kFp8,  // e4m3/e5m2 storage, fp32 accumulate
};

// Bytes one element occupies in memory (tf32 is stored as fp32).
int bytes_per_element(DType d);

std::string_view name(DType d);  // "fp32", "tf32", "fp16", "bf16", "fp8"

// Parses the names above; nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view text);

// "fp32, tf32, fp16, bf16, fp8", for error messages.
std::string dtype_names();

}  // namespace gpusim::hw
