#include "validation/functional/counters.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace gpusim::functional {

CtaCount& CtaCount::operator+=(const CtaCount& o) {
  math_flops += o.math_flops;
  useful_flops += o.useful_flops;
  bytes_loaded += o.bytes_loaded;
  bytes_unique += o.bytes_unique;
  bytes_written += o.bytes_written;
  return *this;
}

CtaCount KernelCounts::total() const {
  CtaCount t;
  for (const auto& c : ctas) t += c;
  return t;
}

Footprint::Footprint(std::int64_t elements, std::int64_t elt_bytes)
    : elements_(elements),
      elt_bytes_(elt_bytes),
      // Value-initialized: every element starts unseen.
      words_(std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>((elements + 63) / 64))) {}

std::int64_t Footprint::touch(std::int64_t begin, std::int64_t count) {
  if (count == 0) return 0;
  if (begin < 0 || count < 0 || begin + count > elements_) {
    throw std::out_of_range("Footprint: elements out of range");
  }
  std::int64_t fresh = 0;
  for (std::int64_t i = begin; i < begin + count;) {
    const std::int64_t bit = i % 64, n = std::min<std::int64_t>(64 - bit, begin + count - i);
    const std::uint64_t mask = (n == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << n) - 1)) << bit;
    const std::uint64_t before =
        words_[static_cast<std::size_t>(i / 64)].fetch_or(mask, std::memory_order_relaxed);
    fresh += std::popcount(mask & ~before);
    i += n;
  }
  return fresh * elt_bytes_;
}

KernelCounts run_ctas(std::string name, std::int64_t ctas,
                      const std::function<void(std::int64_t, CtaCount&)>& body) {
  KernelCounts k;
  k.name = std::move(name);
  k.ctas.resize(static_cast<std::size_t>(ctas));
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, ctas),
                    [&](const tbb::blocked_range<std::int64_t>& r) {
                      for (std::int64_t c = r.begin(); c != r.end(); ++c) {
                        body(c, k.ctas[static_cast<std::size_t>(c)]);
                      }
                    });
  return k;
}

}  // namespace gpusim::functional
