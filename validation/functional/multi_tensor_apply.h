// torch._foreach_* ops and fused optimizers as multi_tensor_apply launches them
// (MultiTensorApply.cuh; models/foreach_kernels.cpp, lower_multi_tensor_apply): the tensors cut
// into chunks of 65536 elements, one CTA per chunk; a launch whenever 320 chunks or the
// depth's tensor slots ({110, 64, 48, 36, 30} addresses per list for 1 to 5 lists; 96 for one
// list with a scalar per tensor) fill up, the tensor in progress carried on to the next launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "validation/functional/counters.h"
#include "validation/functional/tensor.h"

namespace gpusim::functional {

constexpr std::int64_t kMtaChunk = 65536, kMtaMaxBlocks = 320;

// The tensor slots of a launch for `depth` lists.
std::int64_t mta_max_tensors(int depth, bool scalar_list);

// One CTA's work: elements [begin, begin + count) of tensor `tensor`.
struct MtaChunk {
  std::size_t tensor = 0;
  std::int64_t begin = 0, count = 0;
};
// The launches, each its chunks in CTA order. Empty tensors are skipped.
std::vector<std::vector<MtaChunk>> mta_schedule(const std::vector<std::int64_t>& elems,
                                                std::int64_t max_tensors);

struct ForeachOp {
  std::string name;
  // lists[l][t]: tensor t of list l (every list has the same sizes); a tensor may appear in
  // several lists (addcmul_'s gradient, twice: it is loaded once from DRAM).
  std::vector<std::vector<Tensor*>> lists;
  std::vector<bool> loaded, written;  // per list
  // The op at one element: v[l] holds list l's value (loaded lists) and takes the written
  // lists' new values; `tensor` indexes the tensor (scalar lists: bias corrections).
  std::function<void(std::size_t tensor, float* v)> f;
  std::int64_t flops_per_element = 0;
  std::int64_t max_tensors = 110;
  std::int64_t elt_bytes = 2;
};

// Runs the op launch by launch (one KernelCounts each). Counts per CTA: each loaded list's
// elements of the chunk loaded (unique per tensor, so a list repeating another's tensors adds
// loads but no unique bytes), each written list's elements stored, flops_per_element per
// element.
std::vector<KernelCounts> foreach_apply(const ForeachOp& op);

}  // namespace gpusim::functional
