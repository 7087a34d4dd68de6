#include "hw/l2_residency.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace gpusim::hw {
namespace {

constexpr std::size_t kTablePoints = 4097;
// Past the horizon less than this share is found.
constexpr double kForgotten = 1e-3;

double share_at(double u, double steepness) { return 1.0 / (1.0 + std::pow(u, steepness)); }

// The share and its integral over 0..u (u in units of `half`) at kTablePoints points evenly to
// `horizon_u` (the integral by Simpson's rule on each interval), interleaved: share, integral.
// Shared by every curve of the same steepness.
std::shared_ptr<const std::vector<double>> curve_table(double steepness, double horizon_u) {
  static std::mutex mutex;
  static std::map<double, std::shared_ptr<const std::vector<double>>> tables;
  const std::lock_guard lock(mutex);
  auto& table = tables[steepness];
  if (!table) {
    auto t = std::make_shared<std::vector<double>>(2 * kTablePoints, 0.0);
    const double h = horizon_u / (kTablePoints - 1);
    (*t)[0] = 1.0;
    for (std::size_t i = 1; i < kTablePoints; ++i) {
      const double a = static_cast<double>(i - 1) * h, b = static_cast<double>(i) * h;
      (*t)[2 * i] = share_at(b, steepness);
      (*t)[2 * i + 1] = (*t)[2 * i - 1] + h / 6 * ((*t)[2 * i - 2] + 4 * share_at((a + b) / 2, steepness) + (*t)[2 * i]);
    }
    table = std::move(t);
  }
  return table;
}

}  // namespace

L2ReuseCurve::L2ReuseCurve(double half, double steepness)
    : half_(half), horizon_u_(std::pow(1 / kForgotten - 1, 1 / steepness)),
      table_(curve_table(steepness, horizon_u_)) {}

double L2ReuseCurve::tabulated(double u, std::size_t column) const {
  const double x = std::clamp(u, 0.0, horizon_u_) / horizon_u_ * (kTablePoints - 1);
  const auto i = std::min(static_cast<std::size_t>(x), kTablePoints - 2);
  const double f = x - static_cast<double>(i);
  const double lo = (*table_)[2 * i + column], hi = (*table_)[2 * i + 2 + column];
  return lo + f * (hi - lo);
}

double L2ReuseCurve::found(double distance) const {
  if (half_ <= 0) return 0;
  const double u = std::max(distance, 0.0) / half_;
  return u >= horizon_u_ ? 0.0 : tabulated(u, 0);
}

double L2ReuseCurve::integral(double u) const { return tabulated(u, 1); }

double L2ReuseCurve::mean_found(double from, double to) const {
  if (half_ <= 0) return 0;
  const double u0 = std::max(from, 0.0) / half_, u1 = std::max(to, 0.0) / half_;
  // A range shorter than the table's step: the share at its middle.
  if (std::abs(u1 - u0) < horizon_u_ / (kTablePoints - 1)) return found((from + to) / 2);
  return (integral(u1) - integral(u0)) / (u1 - u0);
}

template <class Key>
std::int64_t BasicL2Residency<Key>::resident(const Key& tensor) const {
  const auto it = index_.find(tensor);
  return it == index_.end() ? 0 : it->second->bytes;
}

template <class Key>
L2StackPlace BasicL2Residency<Key>::place(const Key& tensor, double limit) const {
  const auto it = index_.find(tensor);
  if (it == index_.end()) return {};
  double sum = 0;
  for (auto e = lru_.begin(); e != it->second && sum <= limit; ++e) sum += static_cast<double>(e->bytes);
  return {it->second->bytes, sum, it->second->traffic};
}

template <class Key>
void BasicL2Residency<Key>::touch(const Key& tensor, std::int64_t bytes, double traffic) {
  // The touched tensor moves to the front with nothing resident, then the least recently used
  // others make room for what it keeps (it is never its own victim).
  auto found = index_.find(tensor);
  if (found != index_.end()) {
    used_ -= found->second->bytes;
    found->second->bytes = 0;
    lru_.splice(lru_.begin(), lru_, found->second);
  }
  const std::int64_t keep = std::min(bytes, capacity_);
  while (used_ + keep > capacity_ && lru_.size() > (found != index_.end() ? 1u : 0u)) {
    Entry& victim = lru_.back();
    const std::int64_t evict = std::min(victim.bytes, used_ + keep - capacity_);
    victim.bytes -= evict;
    used_ -= evict;
    if (victim.bytes == 0) {
      index_.erase(victim.tensor);
      lru_.pop_back();
    }
  }
  if (keep <= 0) {
    if (found != index_.end()) {
      lru_.pop_front();
      index_.erase(found);
    }
    return;
  }
  if (found == index_.end()) {
    lru_.push_front(Entry{tensor, 0});
    index_.emplace(tensor, lru_.begin());
  }
  lru_.front().bytes = keep;
  lru_.front().traffic = traffic;
  used_ += keep;
}

template class BasicL2Residency<std::string>;

void DenseL2Residency::unlink(std::int32_t t) {
  const auto i = static_cast<std::size_t>(t);
  (newer_[i] >= 0 ? older_[static_cast<std::size_t>(newer_[i])] : newest_) = older_[i];
  (older_[i] >= 0 ? newer_[static_cast<std::size_t>(older_[i])] : oldest_) = newer_[i];
}

L2StackPlace DenseL2Residency::place(std::int32_t tensor, double limit) const {
  const std::int64_t kept = resident(tensor);
  if (kept <= 0) return {};
  double sum = 0;
  for (std::int32_t j = newer_[static_cast<std::size_t>(tensor)]; j >= 0 && sum <= limit;
       j = newer_[static_cast<std::size_t>(j)]) {
    sum += static_cast<double>(bytes_[static_cast<std::size_t>(j)]);
  }
  return {kept, sum, traffic_[static_cast<std::size_t>(tensor)]};
}

// BasicL2Residency::touch, step for step.
void DenseL2Residency::touch(std::int32_t tensor, std::int64_t bytes, double traffic) {
  const auto i = static_cast<std::size_t>(tensor);
  if (i >= bytes_.size()) {
    const std::size_t n = std::max(i + 1, 2 * bytes_.size());
    bytes_.resize(n, 0);
    traffic_.resize(n, 0);
    newer_.resize(n, -1);
    older_.resize(n, -1);
  }
  // Listed in recency order exactly while some of it is resident.
  if (bytes_[i] > 0) {
    used_ -= bytes_[i];
    bytes_[i] = 0;
    unlink(tensor);
  }
  // In front, with nothing resident yet (so never its own victim).
  newer_[i] = -1;
  older_[i] = newest_;
  (newest_ >= 0 ? newer_[static_cast<std::size_t>(newest_)] : oldest_) = tensor;
  newest_ = tensor;
  const std::int64_t keep = std::min(bytes, capacity_);
  while (used_ + keep > capacity_ && oldest_ != tensor) {
    const auto v = static_cast<std::size_t>(oldest_);
    const std::int64_t evict = std::min(bytes_[v], used_ + keep - capacity_);
    bytes_[v] -= evict;
    used_ -= evict;
    if (bytes_[v] == 0) unlink(oldest_);
  }
  if (keep <= 0) {
    unlink(tensor);
    return;
  }
  bytes_[i] = keep;
  traffic_[i] = traffic;
  used_ += keep;
}

}  // namespace gpusim::hw
