#include "validation/functional/tensor.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include <tbb/parallel_for.h>

namespace gpusim::functional {

Tensor::Tensor(std::vector<std::int64_t> dims) : shape(std::move(dims)) {
  std::int64_t n = 1;
  for (const auto d : shape) {
    if (d < 0) throw std::invalid_argument("Tensor: negative extent");
    n *= d;
  }
  data.assign(static_cast<std::size_t>(n), 0.f);
}

Tensor random_tensor(std::vector<std::int64_t> shape, std::uint32_t seed, float lo, float hi) {
  Tensor t(std::move(shape));
  // Chunks of 64Ki elements, each from its own mt19937 seeded by (seed, chunk): the values
  // depend only on the seed and the index, and large tensors fill in parallel.
  constexpr std::int64_t kChunk = std::int64_t{1} << 16;
  const std::int64_t n = t.numel();
  tbb::parallel_for(std::int64_t{0}, (n + kChunk - 1) / kChunk, [&](std::int64_t chunk) {
    std::seed_seq seq{seed, static_cast<std::uint32_t>(chunk)};
    std::mt19937 gen(seq);
    for (std::int64_t i = chunk * kChunk; i < std::min(n, (chunk + 1) * kChunk); ++i) {
      // 24 random bits -> [0, 1) exactly representable in float.
      const float u = static_cast<float>(gen() >> 8) * (1.f / 16777216.f);
      t[i] = lo + (hi - lo) * u;
    }
  });
  return t;
}

double relative_error(const Tensor& out, const std::vector<double>& ref) {
  if (out.data.size() != ref.size()) throw std::invalid_argument("relative_error: size mismatch");
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(out.data[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (den == 0) return num == 0 ? 0.0 : std::sqrt(num);
  return std::sqrt(num / den);
}

}  // namespace gpusim::functional
