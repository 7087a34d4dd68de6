#include "hw/l2_residency.h"

#include <algorithm>

namespace gpusim::hw {

std::int64_t L2Residency::resident(const std::string& tensor) const {
  const auto it = index_.find(tensor);
  return it == index_.end() ? 0 : it->second->bytes;
}

std::int64_t L2Residency::touch(const std::string& tensor, std::int64_t bytes, bool dirty) {
  bool was_dirty = false;
  if (const auto it = index_.find(tensor); it != index_.end()) {
    // Re-touching a tensor keeps its bytes where they are; a read of dirty data stays dirty.
    was_dirty = it->second->dirty;
    used_ -= it->second->bytes;
    if (was_dirty) dirty_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  std::int64_t written_back = 0;
  const std::int64_t keep = std::min(bytes, capacity_);
  if (dirty) written_back += bytes - keep;  // what cannot stay goes straight through
  while (used_ + keep > capacity_ && !lru_.empty()) {
    Entry& victim = lru_.back();
    const std::int64_t evict = std::min(victim.bytes, used_ + keep - capacity_);
    victim.bytes -= evict;
    used_ -= evict;
    if (victim.dirty) {
      dirty_ -= evict;
      written_back += evict;
    }
    if (victim.bytes == 0) {
      index_.erase(victim.tensor);
      lru_.pop_back();
    }
  }
  if (keep <= 0) return written_back;
  const bool now_dirty = dirty || was_dirty;
  lru_.push_front(Entry{tensor, keep, now_dirty});
  index_[tensor] = lru_.begin();
  used_ += keep;
  if (now_dirty) dirty_ += keep;
  return written_back;
}

void L2Residency::clear() {
  lru_.clear();
  index_.clear();
  used_ = 0;
  dirty_ = 0;
}

}  // namespace gpusim::hw
