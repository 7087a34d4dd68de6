#include "validation/functional/multi_tensor_apply.h"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

namespace gpusim::functional {

std::int64_t mta_max_tensors(int depth, bool scalar_list) {
  constexpr std::int64_t kMax[5] = {110, 64, 48, 36, 30};
  if (depth < 1 || depth > 5) throw std::invalid_argument("multi_tensor_apply: 1 to 5 lists");
  return scalar_list && depth == 1 ? 96 : kMax[depth - 1];
}

std::vector<std::vector<MtaChunk>> mta_schedule(const std::vector<std::int64_t>& elems,
                                                std::int64_t max_tensors) {
  std::vector<std::vector<MtaChunk>> launches;
  std::vector<MtaChunk> cur;
  std::int64_t tensors = 0;  // tensor slots used by the launch being filled
  for (std::size_t t = 0; t < elems.size(); ++t) {
    const std::int64_t n = elems[t];
    if (n <= 0) continue;
    ++tensors;
    const std::int64_t chunks = (n + kMtaChunk - 1) / kMtaChunk;
    for (std::int64_t ch = 0; ch < chunks; ++ch) {
      cur.push_back({t, ch * kMtaChunk, std::min(kMtaChunk, n - ch * kMtaChunk)});
      const bool last_chunk = ch == chunks - 1;
      const bool tensors_full = tensors == max_tensors && last_chunk;
      if (tensors_full || static_cast<std::int64_t>(cur.size()) == kMtaMaxBlocks) {
        launches.push_back(std::move(cur));
        cur.clear();
        // A tensor with chunks left keeps its slot in the next launch.
        tensors = last_chunk ? 0 : 1;
      }
    }
  }
  if (!cur.empty()) launches.push_back(std::move(cur));
  return launches;
}

std::vector<KernelCounts> foreach_apply(const ForeachOp& op) {
  const std::size_t depth = op.lists.size();
  if (depth == 0 || op.loaded.size() != depth || op.written.size() != depth || !op.f) {
    throw std::invalid_argument("foreach_apply: lists, loaded and written must match");
  }
  std::vector<std::int64_t> elems;
  for (const Tensor* t : op.lists[0]) elems.push_back(t->numel());
  for (const auto& list : op.lists) {
    if (list.size() != elems.size())
      throw std::invalid_argument("foreach_apply: one tensor per list entry");
    for (std::size_t t = 0; t < list.size(); ++t) {
      if (list[t]->numel() != elems[t])
        throw std::invalid_argument("foreach_apply: list sizes differ");
    }
  }
  // One footprint per distinct tensor and launch: the launch is the kernel whose unique
  // reads are counted.
  std::vector<KernelCounts> out;
  for (const auto& chunks : mta_schedule(elems, op.max_tensors)) {
    std::map<const Tensor*, std::unique_ptr<Footprint>> fps;
    for (std::size_t l = 0; l < depth; ++l) {
      if (!op.loaded[l]) continue;
      for (const MtaChunk& ch : chunks) {
        auto& fp = fps[op.lists[l][ch.tensor]];
        if (!fp) fp = std::make_unique<Footprint>(elems[ch.tensor], op.elt_bytes);
      }
    }
    out.push_back(run_ctas(op.name, static_cast<std::int64_t>(chunks.size()),
                           [&](std::int64_t cta, CtaCount& c) {
                             const MtaChunk& ch = chunks[static_cast<std::size_t>(cta)];
                             std::vector<float> v(depth);
                             for (std::size_t l = 0; l < depth; ++l) {
                               if (op.loaded[l])
                                 count_load(c, *fps.at(op.lists[l][ch.tensor]), ch.begin, ch.count);
                               if (op.written[l]) c.bytes_written += ch.count * op.elt_bytes;
                             }
                             for (std::int64_t e = ch.begin; e < ch.begin + ch.count; ++e) {
                               for (std::size_t l = 0; l < depth; ++l)
                                 v[l] = op.loaded[l] ? (*op.lists[l][ch.tensor])[e] : 0.f;
                               op.f(ch.tensor, v.data());
                               for (std::size_t l = 0; l < depth; ++l) {
                                 if (op.written[l]) (*op.lists[l][ch.tensor])[e] = v[l];
                               }
                             }
                             c.math_flops = c.useful_flops = ch.count * op.flops_per_element;
                           }));
  }
  return out;
}

}  // namespace gpusim::functional
