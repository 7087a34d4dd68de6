// torch.amax's backward over the last dimension, as autograd runs it (derivatives.yaml:
// scale_grad_by_count(grad, result == input, dim) = (grad / mask.sum(dim, keepdim)) * mask):
// the input compared with its broadcast row maxima into a bool mask, the mask cast to int64
// (a sum over bool accumulates in int64, and the reduction reads its input in that type), the
// count of each row's maxima, the row gradient divided by it, and the quotient broadcast times
// the mask. Five launches, the kernels validation/data/cs336_train_h100.json.gz lists for the
// hand-written softmax's and loss's amax; each is lowered by its family's model. Hand-written
// softmaxes save the input for this (torch.max over a dim saves its argmax instead).
#include <string>

#include "models/common.h"
#include "models/families.h"
#include "models/training_kernels.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {

// A bool is 1 byte (fp8's size, the 1-byte type hw::DType has); an int64 is 8 bytes.
constexpr hw::DType kBool = hw::DType::kFp8;
constexpr double kInt64Bytes = 8.0;

// Scales a launch's stores (a cast whose output type is wider than the model's `out` type).
void widen_writes(Launch& l, double factor) {
  for (auto& c : l.ctas) {
    const double extra = c.work.dram_write_bytes * (factor - 1.0);
    c.work.dram_write_bytes += extra;
    c.work.l2_bytes += extra;
  }
}

}  // namespace

std::vector<Launch> lower_amax_backward(std::int64_t rows, std::int64_t cols, hw::DType dtype, const TensorUse& input,
                                        const TensorUse& result, const TensorUse& grad_rows,
                                        const TensorUse& grad_in, const hw::HardwareSpec& hw) {
  if (rows <= 0 || cols <= 0) throw ModelError("amax backward: rows and cols must be positive");
  const std::int64_t n = rows * cols;
  const std::string mask = grad_in.tensor + ".amax_mask", counts = grad_in.tensor + ".amax_mask_int64";
  const std::string count = grad_in.tensor + ".amax_count", quotient = grad_in.tensor + ".amax_quotient";
  std::vector<Launch> out;
  const auto add = [&out](std::vector<Launch> ls) {
    for (Launch& l : ls) out.push_back(std::move(l));
  };
  // result == input: the maxima broadcast over their rows (the legacy strided kernel).
  ElementwiseProblem eq;
  eq.func = EwFunc::kEq;
  eq.n = n;
  eq.in = dtype;
  eq.out = kBool;
  eq.inputs = {result.tensor, input.tensor};
  eq.output = mask;
  eq.strided = true;
  add(lower_elementwise(eq, hw, ""));
  // The mask cast to int64 (unrolled kernel with a dynamic cast): 8-byte stores.
  ElementwiseProblem cast;
  cast.func = EwFunc::kCast;
  cast.n = n;
  cast.in = kBool;
  cast.out = hw::DType::kFp32;
  cast.inputs = {mask};
  cast.output = counts;
  std::vector<Launch> casts = lower_elementwise(cast, hw, "");
  for (Launch& l : casts) widen_writes(l, kInt64Bytes / detail::elt_bytes(cast.out));
  add(std::move(casts));
  // The int64 sum of each row: its bytes read as twice the 4-byte elements.
  const double count_bytes = static_cast<double>(rows) * kInt64Bytes;
  Launch sum = lower_reduce(rows, 2 * cols, hw::DType::kFp32, hw::DType::kFp32, true,
                            "at::native::func_wrapper_t<long, at::native::sum_functor<long, long, long>::operator()"
                            "(at::TensorIterator&)::{lambda(long, long)#1}>",
                            TensorUse{counts, static_cast<std::int64_t>(static_cast<double>(n) * kInt64Bytes)},
                            TensorUse{count, static_cast<std::int64_t>(count_bytes)}, hw);
  sum.name.replace(sum.name.find("ReduceOp<float"), 14, "ReduceOp<long");
  out.push_back(std::move(sum));
  // grad / count, one value a row.
  ElementwiseProblem div;
  div.func = EwFunc::kDiv;
  div.n = rows;
  div.in = div.out = dtype;
  div.inputs = {grad_rows.tensor, count};
  div.output = quotient;
  add(lower_elementwise(div, hw, ""));
  // The quotient broadcast over its row times the mask (cast inside the kernel).
  ElementwiseProblem mul;
  mul.func = EwFunc::kMul;
  mul.n = n;
  mul.in = kBool;
  mul.out = dtype;
  mul.inputs = {quotient, mask};
  mul.output = grad_in.tensor;
  mul.strided = true;
  add(lower_elementwise(mul, hw, ""));
  return out;
}

}  // namespace gpusim::models
