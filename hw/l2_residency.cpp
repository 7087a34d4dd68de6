#include "hw/l2_residency.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace gpusim::hw {

template <class Key>
std::int64_t BasicL2Residency<Key>::resident(const Key& tensor) const {
  const auto it = index_.find(tensor);
  return it == index_.end() ? 0 : it->second->bytes;
}

template <class Key>
void BasicL2Residency<Key>::touch(const Key& tensor, std::int64_t bytes) {
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
  used_ += keep;
}

template class BasicL2Residency<std::string>;
template class BasicL2Residency<std::int32_t>;

}  // namespace gpusim::hw
