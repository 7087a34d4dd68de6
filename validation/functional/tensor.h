// fp32 tensors for the functional kernels: a shape and row-major data. The kernels compute in
// fp32 (as the GPU kernels accumulate); byte counts use the modeled storage type separately.
#pragma once

#include <cstdint>
#include <vector>

namespace gpusim::functional {

struct Tensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(std::vector<std::int64_t> dims);  // zeros

  std::int64_t numel() const { return static_cast<std::int64_t>(data.size()); }
  std::int64_t dim(std::size_t i) const { return shape.at(i); }
  float& operator[](std::int64_t i) { return data[static_cast<std::size_t>(i)]; }
  float operator[](std::int64_t i) const { return data[static_cast<std::size_t>(i)]; }
};

// Uniform in [lo, hi) from std::mt19937 seeded with (seed, chunk of 64Ki elements): the same
// values on every platform and thread count for a seed (the distribution is evaluated by hand,
// not by std::uniform_real_distribution, whose output is implementation-defined).
Tensor random_tensor(std::vector<std::int64_t> shape, std::uint32_t seed, float lo = -1.f,
                     float hi = 1.f);

// ||out - ref|| / ||ref|| (Euclidean norms); ref in double, from the references. 0 when both
// are zero; sizes must match (std::invalid_argument otherwise).
double relative_error(const Tensor& out, const std::vector<double>& ref);

}  // namespace gpusim::functional
