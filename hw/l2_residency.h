// Which tensors went through the L2 between kernels, in the order they were last used: the
// stack from which L2ReuseCurve tells how much of each a kernel still finds. Tracked at tensor
// granularity with partial residency: a tensor larger than what is kept keeps its most recently
// touched bytes. Tensors are named by strings (the engine) or by integer ids (the serial chain
// runner, hw/serial_chain.h); both follow the same rule.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "hw/hardware_spec.h"

namespace gpusim::hw {

// Where a tensor stands in the stack: its bytes kept, the bytes of the tensors used since (counted
// up to a limit), and the bytes the kernel that last touched it moved in all (zeros when out).
struct L2StackPlace {
  std::int64_t resident = 0;
  double newer_bytes = 0;
  double traffic = 0;
};

template <class Key>
class BasicL2Residency {
 public:
  explicit BasicL2Residency(std::int64_t capacity) : capacity_(capacity) {}

  // Bytes of `tensor` now in L2.
  std::int64_t resident(const Key& tensor) const;
  // All of the tensor's place at one lookup (the stack walk stops counting past `limit`).
  L2StackPlace place(const Key& tensor, double limit) const;
  // The tensor was just read or written in full: it becomes the most recently used, with up to
  // `bytes` resident, evicting the least recently used tensors as needed.
  void touch(const Key& tensor, std::int64_t bytes, double traffic = 0);

 private:
  struct Entry {
    Key tensor;
    std::int64_t bytes;
    double traffic = 0;
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

  std::int64_t resident(std::int32_t tensor) const {
    return static_cast<std::size_t>(tensor) < bytes_.size() ? bytes_[static_cast<std::size_t>(tensor)] : 0;
  }
  L2StackPlace place(std::int32_t tensor, double limit) const;
  void touch(std::int32_t tensor, std::int64_t bytes, double traffic = 0);

 private:
  void unlink(std::int32_t t);
  std::int64_t capacity_;
  std::int64_t used_ = 0;
  // By id: resident bytes (0 when out), and the neighbours in recency order (-1: none) of those
  // with bytes resident.
  std::vector<std::int64_t> bytes_;
  std::vector<double> traffic_;
  std::vector<std::int32_t> newer_, older_;
  std::int32_t newest_ = -1, oldest_ = -1;
};

// How much of what earlier kernels left in L2 a kernel still finds, by stack distance: a line
// after which D bytes of other lines went through the L2 is found with the share
// 1 / (1 + (D / half)^steepness), and not at all past the horizon, where that share falls below
// a thousandth. Measured (validation/measure/l2_reuse_probe.py, l2_order_probe.py): the
// replacement is not a strict LRU, so the share falls smoothly around `half` rather than at the
// L2's size.
class L2ReuseCurve {
 public:
  static L2ReuseCurve of(const L2Spec& l2) {
    return L2ReuseCurve(static_cast<double>(l2.size) * l2.reuse_share, l2.reuse_steepness);
  }
  L2ReuseCurve(double half, double steepness);

  // The share found at one distance (bytes).
  double found(double distance) const;
  // The mean share found over distances running evenly from `from` to `to` (a tensor's lines),
  // from the curve's integral (tabulated once per steepness): no power functions per kernel.
  double mean_found(double from, double to) const;
  double horizon() const { return half_ * horizon_u_; }

 private:
  double tabulated(double u, std::size_t column) const;  // column 0: the share, 1: its integral
  double integral(double u) const;  // of the share over distances 0..u x half

  double half_ = 0, horizon_u_ = 0;
  std::shared_ptr<const std::vector<double>> table_;  // the share and its integral to horizon_u_
};

// A kernel's pass through L2: the share of its input bytes it finds there, then what it leaves.
// Uses are TensorUse-like (tensor, bytes, evict_first) with tensors named as the L2 names them.
struct L2Pass {
  double read_miss = 1;      // share of input bytes not found in L2 (1 without inputs)
  double read_hit_rate = 0;  // share found (0 without inputs)
};
template <class Residency, class Uses>
L2Pass pass_through_l2(Residency& l2, const L2ReuseCurve& curve, const Uses& reads, const Uses& writes) {
  // The lines this kernel takes in L2 as it runs (an evict-first stream takes none).
  double traffic = 0;
  for (const auto& t : reads) traffic += t.evict_first ? 0.0 : static_cast<double>(t.bytes);
  for (const auto& t : writes) traffic += static_cast<double>(t.bytes);
  double read_bytes = 0, hits = 0;
  for (const auto& t : reads) {
    read_bytes += static_cast<double>(t.bytes);
    const L2StackPlace at = l2.place(t.tensor, curve.horizon());
    const double resident = static_cast<double>(std::min(at.resident, t.bytes));
    if (resident <= 0) continue;
    // The line at position p of the tensor (kernels sweep their tensors in the same order): the
    // rest of the last kernel that touched it came after it, then the tensors used since (that
    // kernel's own later ones counted again, a small excess), then this kernel's traffic up to p.
    hits += resident * curve.mean_found(at.newer_bytes + at.traffic, at.newer_bytes + traffic);
  }
  L2Pass pass;
  pass.read_miss = read_bytes > 0 ? 1.0 - hits / read_bytes : 1.0;
  pass.read_hit_rate = read_bytes > 0 ? hits / read_bytes : 0.0;
  for (const auto& t : reads) {
    if (!t.evict_first) l2.touch(t.tensor, t.bytes, traffic);
  }
  for (const auto& t : writes) l2.touch(t.tensor, t.bytes, traffic);
  return pass;
}

}  // namespace gpusim::hw
