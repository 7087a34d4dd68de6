#include "hw/dtype.h"

#include <array>

namespace gpusim::hw {
namespace {
constexpr std::array kAll{DType::kFp32, DType::kTf32, DType::kFp16, DType::kBf16, DType::kFp8};
}

int bytes_per_element(DType d) {
  switch (d) {
    case DType::kFp32:
    case DType::kTf32: return 4;
    case DType::kFp16:
    case DType::kBf16: return 2;
    case DType::kFp8: return 1;
  }
  return 4;
}

std::string_view name(DType d) {
  switch (d) {
    case DType::kFp32: return "fp32";
    case DType::kTf32: return "tf32";
    case DType::kFp16: return "fp16";
    case DType::kBf16: return "bf16";
    case DType::kFp8: return "fp8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view text) {
  for (const DType d : kAll) {
    if (name(d) == text) return d;
  }
  return std::nullopt;
}

std::string dtype_names() {
  std::string out;
  for (const DType d : kAll) out += (out.empty() ? "" : ", ") + std::string(name(d));
  return out;
}

}  // namespace gpusim::hw
