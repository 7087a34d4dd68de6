#include "validation/functional/synthetic_state.h"

namespace gpusim::functional {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

float synthetic_value(const std::string& name, std::int64_t i) {
  const std::uint64_t bits = splitmix64(fnv1a(name) ^ splitmix64(static_cast<std::uint64_t>(i)));
  const double u = static_cast<double>(bits >> 11) * (2.0 / 9007199254740992.0) - 1.0;  // [-1, 1)
  if (name.find("norm") != std::string::npos) return static_cast<float>(1.0 + 0.1 * u);
  if (name.rfind("w.embed_tokens", 0) == 0) return static_cast<float>(u);
  if (name.rfind("w.", 0) != 0) return static_cast<float>(0.5 * u);
  return static_cast<float>(0.3 * u);
}

std::vector<float> synthetic_tensor(const std::string& name, std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = synthetic_value(name, i);
  return v;
}

std::int64_t synthetic_token(std::int64_t b, std::int64_t position, std::int64_t vocab) {
  return (7 * position + 13 * b + 3) % vocab;
}

}  // namespace gpusim::functional
