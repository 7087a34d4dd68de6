// TorchInductor's generated Triton kernels (torch.compile's default mode on CUDA), the kernels a
// compiled training step launches around cuBLAS GEMMs and the SDPA kernels
// (models/inductor_kernels.cpp): pointwise kernels (triton_poi_*), row reductions that hold a row
// in registers (triton_per_*) or loop over it (triton_red_*), and the split column sums Inductor
// makes of weight-gradient reductions. Each kernel is described by its iteration space and the
// tensors it reads and writes (bytes as touched); the launch configuration is Inductor's
// heuristic's. Checked against the compiled cases of validation/data/hf_train4_h100.json.gz
// (PyTorch 2.11, Triton 3.6).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"

namespace gpusim::models {

struct TritonKernel {
  std::string name;          // as the profiler shows it, e.g. "triton_poi_fused_mul_silu"
  std::int64_t xnumel = 0;   // pointwise: elements; reduction: rows
  std::int64_t rnumel = 0;   // reduction: elements a row (0: a pointwise kernel)
  int passes = 1;            // a looped reduction's loops over its row (RMSNorm's: the sum, then the scale)
  int threads = 0;           // 0: the heuristic's block
  std::int64_t blocks = 0;   // 0: the heuristic's grid (the work is shared evenly by the blocks)
  double flops_per_elem = 2;  // FP32 work per element of the iteration space
  std::vector<hw::TensorUse> reads, writes;
};
hw::Launch lower_triton(const TritonKernel& k, const hw::HardwareSpec& hw);

// x.sum(0) of a rows x cols product (a norm weight's or a bias's gradient) as Inductor splits it:
// a looped reduction writing fp32 partial sums of row groups, then a persistent one summing them
// into `output`. `reads` are what the partial kernel reads (the gradient and the saved input).
std::vector<hw::Launch> lower_triton_column_sum(const std::string& name, std::int64_t rows, std::int64_t cols,
                                                const std::vector<hw::TensorUse>& reads, const hw::TensorUse& output,
                                                const hw::HardwareSpec& hw);

}  // namespace gpusim::models
