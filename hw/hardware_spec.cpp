#include "hw/hardware_spec.h"

namespace gpusim::hw {

double HardwareSpec::tensor_flops_per_cycle(DType d) const {
  switch (d) {
    case DType::kFp32: return 0;
    case DType::kTf32: return throughput.tensor_tf32;
    case DType::kFp16: return throughput.tensor_fp16;
    case DType::kBf16: return throughput.tensor_bf16;
    case DType::kFp8: return throughput.tensor_fp8;
  }
  return 0;
}

double HardwareSpec::peak_tensor_flops(DType d) const {
  return tensor_flops_per_cycle(d) * sm_count * clocks.sustained_tensor_hz;
}

double HardwareSpec::peak_fp32_flops() const {
  return throughput.fp32 * sm_count * clocks.sustained_other_hz;
}

}  // namespace gpusim::hw
