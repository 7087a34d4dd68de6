// The kernel a library ran, as a class: the kernel's name without its tiles, stages, alignment
// and template arguments, so that gpusim's choice can be compared with the measured one
// ("nvjet_sm90", "cutlass_75_tensorop", "cutlass_80_wmma_tensorop", "gemmSN",
// "softmax_warp_forward", "cunn_SoftMaxForward", ...).
#pragma once

#include <string>
#include <string_view>

namespace gpusim::validation {

std::string kernel_class(std::string_view name);

// The output tile a library GEMM kernel's name carries, as "<N>x<M>" in cuBLAS's order (nvjet
// "64x8", CUTLASS "128x64", sm80_xmma's tilesize "32x32"); empty for kernels that name none
// (gemmSN, the GEMV, non-GEMM kernels). With kernel_class it says whether gpusim picked cuBLAS's
// kernel and tile.
std::string kernel_tile(std::string_view name);

// Whether a kernel only helps another do the op's work (a split-K reduce, a memset): an op's
// primary kernel is its longest kernel that is not one.
bool is_helper_kernel(std::string_view name);

}  // namespace gpusim::validation
