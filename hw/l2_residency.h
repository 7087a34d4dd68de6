// Which tensors the L2 holds between kernels, least recently used first out. Tracked at tensor
// granularity with partial residency: a tensor larger than what is free keeps its most
// recently touched bytes. Tensors are named by strings (the engine) or by integer ids (the
// serial chain runner, hw/serial_chain.h); both follow the same rule.
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpusim::hw {

template <class Key>
class BasicL2Residency {
 public:
  explicit BasicL2Residency(std::int64_t capacity) : capacity_(capacity) {}

  std::int64_t capacity() const { return capacity_; }
  // Bytes of `tensor` now in L2.
  std::int64_t resident(const Key& tensor) const;
  // The tensor was just read or written in full: it becomes the most recently used, with up to
  // `bytes` resident, evicting the least recently used tensors as needed.
  void touch(const Key& tensor, std::int64_t bytes);

 private:
  struct Entry {
    Key tensor;
    std::int64_t bytes;
  };
  std::int64_t capacity_;
  std::int64_t used_ = 0;
  std::list<Entry> lru_;  // front: most recently used
  std::unordered_map<Key, typename std::list<Entry>::iterator> index_;
};

using L2Residency = BasicL2Residency<std::string>;

// The same rule for tensors numbered 0, 1, 2, ... (hw/serial_chain.h): arrays by id instead of
// a hash table and list nodes.
class DenseL2Residency {
 public:
  explicit DenseL2Residency(std::int64_t capacity) : capacity_(capacity) {}

  std::int64_t capacity() const { return capacity_; }
  std::int64_t resident(std::int32_t tensor) const {
    return static_cast<std::size_t>(tensor) < bytes_.size() ? bytes_[static_cast<std::size_t>(tensor)] : 0;
  }
  void touch(std::int32_t tensor, std::int64_t bytes);

 private:
  void unlink(std::int32_t t);
  std::int64_t capacity_;
  std::int64_t used_ = 0;
  // By id: resident bytes (0 when out), and the neighbours in recency order (-1: none) of those
  // with bytes resident.
  std::vector<std::int64_t> bytes_;
  std::vector<std::int32_t> newer_, older_;
  std::int32_t newest_ = -1, oldest_ = -1;
};

// A kernel's pass through L2: the share of its input bytes it finds there, then what it leaves.
// Uses are TensorUse-like (tensor, bytes, evict_first) with tensors named as the L2 names them.
struct L2Pass {
  double read_miss = 1;      // share of input bytes not found in L2 (1 without inputs)
  double read_hit_rate = 0;  // share found (0 without inputs)
};
template <class Residency, class Uses>
L2Pass pass_through_l2(Residency& l2, const Uses& reads, const Uses& writes) {
  double read_bytes = 0, hits = 0, write_bytes = 0;
  for (const auto& t : reads) {
    read_bytes += static_cast<double>(t.bytes);
    hits += static_cast<double>(std::min(l2.resident(t.tensor), t.bytes));
  }
  // While the kernel runs, its own writes take L2 lines, and the LRU victims are the inputs it
  // has not read yet (those it read became most recent): only what its writes leave room for
  // can still hit.
  for (const auto& t : writes) write_bytes += static_cast<double>(t.bytes);
  hits = std::min(hits, std::max(0.0, static_cast<double>(l2.capacity()) - write_bytes));
  L2Pass pass;
  pass.read_miss = read_bytes > 0 ? 1.0 - hits / read_bytes : 1.0;
  pass.read_hit_rate = read_bytes > 0 ? hits / read_bytes : 0.0;
  for (const auto& t : reads) {
    if (!t.evict_first) l2.touch(t.tensor, t.bytes);
  }
  for (const auto& t : writes) l2.touch(t.tensor, t.bytes);
  return pass;
}

}  // namespace gpusim::hw
