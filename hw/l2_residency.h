// Which tensors the L2 holds between kernels, least recently used first out. Tracked at tensor
// granularity with partial residency: a tensor larger than what is free keeps its most
// recently touched bytes.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

namespace gpusim::hw {

class L2Residency {
 public:
  explicit L2Residency(std::int64_t capacity) : capacity_(capacity) {}

  std::int64_t capacity() const { return capacity_; }
  // Bytes of `tensor` now in L2.
  std::int64_t resident(const std::string& tensor) const;
  // The tensor was just read or written in full: it becomes the most recently used, with up to
  // `bytes` resident, evicting the least recently used tensors as needed.
  void touch(const std::string& tensor, std::int64_t bytes);

 private:
  struct Entry {
    std::string tensor;
    std::int64_t bytes;
  };
  std::int64_t capacity_;
  std::int64_t used_ = 0;
  std::list<Entry> lru_;  // front: most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace gpusim::hw
