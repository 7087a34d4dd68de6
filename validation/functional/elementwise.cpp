#include "validation/functional/elementwise.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace gpusim::functional {

std::int64_t elementwise_elements_per_cta(int arity, std::int64_t in_bytes, std::int64_t out_bytes,
                                          bool strided, bool cast) {
  constexpr std::int64_t kThreads = 128;
  if (strided) return kThreads * (out_bytes >= 4 && in_bytes == out_bytes ? 2 : 4);
  if (cast) return kThreads * 4;
  return kThreads * (arity * in_bytes + out_bytes <= 1 ? 16 : 8);
}

OpRun elementwise(const EwKernel& k) {
  OpRun run;
  run.out = Tensor(k.out_shape);
  const std::int64_t n = run.out.numel();
  if (k.per_cta <= 0 || !k.f) throw std::invalid_argument("elementwise: bad kernel");
  std::vector<std::unique_ptr<Footprint>> fps;
  for (const auto& in : k.inputs) fps.push_back(std::make_unique<Footprint>(in.tensor->numel(), k.in_bytes));
  const std::int64_t ctas = (n + k.per_cta - 1) / k.per_cta;
  run.kernels.push_back(run_ctas(k.name, ctas, [&](std::int64_t cta, CtaCount& c) {
    const std::int64_t e0 = cta * k.per_cta, elems = std::min(k.per_cta, n - e0);
    std::vector<float> vals(k.inputs.size());
    for (std::int64_t e = e0; e < e0 + elems; ++e) {
      for (std::size_t i = 0; i < k.inputs.size(); ++i) {
        const std::int64_t src = k.inputs[i].index ? k.inputs[i].index(e) : e;
        count_load(c, *fps[i], src);
        vals[i] = (*k.inputs[i].tensor)[src];
      }
      run.out[e] = k.f(vals.data());
    }
    c.math_flops = c.useful_flops = elems * k.flops_per_element;
    c.bytes_written = elems * k.out_bytes;
  }));
  return run;
}

}  // namespace gpusim::functional
