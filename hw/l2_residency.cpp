#include "hw/l2_residency.h"

#include <algorithm>

namespace gpusim::hw {

std::int64_t L2Residency::resident(const std::string& tensor) const {
  const auto it = index_.find(tensor);
  return it == index_.end() ? 0 : it->second->bytes;
}

void L2Residency::touch(const std::string& tensor, std::int64_t bytes) {
  if (const auto it = index_.find(tensor); it != index_.end()) {
    used_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  const std::int64_t keep = std::min(bytes, capacity_);
  while (used_ + keep > capacity_ && !lru_.empty()) {
    Entry& victim = lru_.back();
    const std::int64_t evict = std::min(victim.bytes, used_ + keep - capacity_);
    victim.bytes -= evict;
    used_ -= evict;
    if (victim.bytes == 0) {
      index_.erase(victim.tensor);
      lru_.pop_back();
    }
  }
  if (keep <= 0) return;
  lru_.push_front(Entry{tensor, keep});
  index_[tensor] = lru_.begin();
  used_ += keep;
}

}  // namespace gpusim::hw
