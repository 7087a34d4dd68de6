// The optimizers' kernels: torch._foreach_* ops as multi_tensor_apply launches them
// (MultiTensorApply.cuh: chunks of 65,536 elements, 320 CTAs and a depth-dependent number of
// tensors a launch) and torch._fused_adamw_, checked against the optimizer phases of
// validation/data/hf_train_h100.json.gz.
#include "models/training_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "hw/occupancy.h"
#include "models/common.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {
using detail::ceil_div;

// multi_tensor_apply: a thread's loop iteration loads kILP elements of every list it reads,
// computes and stores them, and the next iteration's loads do not start before: a dependent
// memory round trip and a half per iteration (the loaded latency of the load, the math, the
// store's issue). Fitted on the AdamW and SGD foreach ops of the calibration cases: the last,
// short launches (49-151 CTAs) take 17-25 us bf16 and 20-36 us fp32 whatever their bytes, and
// the full 320-chunk launches stream at 2.4-2.8 TB/s.
constexpr double kForeachRoundTripsPerIteration = 1.6;
// torch._fused_adamw_ does its update in double precision (lr, the betas, eps and the weight
// decay are doubles in FusedAdamMathFunctor, so the moments' updates, the step and the final
// division promote): about this many FP64 instructions per element, each taking the FP32 pipe's
// time of two FMAs on sm_80/sm_90 (half-rate FP64; the hardware description has no FP64 rate).
// Fitted on the fused AdamW case (full launches 127 us, the 49-CTA tail 40.5 us).
constexpr double kFusedAdamFp64OpsPerElem = 30.0;
constexpr double kFp64FlopsEquivalent = 4.0;  // FP32 FLOPs (FMA = 2) of pipe time per FP64 op

}  // namespace

// ---- multi_tensor_apply (foreach ops and fused optimizers) ---------------------------------

namespace {
constexpr std::int64_t kChunk = 65536;      // elements per CTA (kChunkSize)
constexpr std::int64_t kMaxBlocks = 320;    // CTAs per launch (depth_to_max_blocks)
constexpr std::int64_t kMtaThreads = 512;   // kBlockSize
constexpr std::int64_t kIlp = 4;            // elements a thread loads per list and iteration

// The chunks (elements each) and tensors of one launch.
struct MtaLaunch {
  std::vector<std::int64_t> chunks;
  std::vector<std::pair<std::size_t, double>> tensors;  // tensor index, share of it in this launch
};

// multi_tensor_apply's loop: a launch whenever the CTAs or the tensor slots fill up (a tensor
// counts as placed once its last chunk is), the tensor in progress carried to the next launch.
std::vector<MtaLaunch> mta_schedule(const std::vector<std::int64_t>& elems, std::int64_t max_tensors) {
  std::vector<MtaLaunch> out;
  MtaLaunch cur;
  std::int64_t loc_tensors = 0;
  for (std::size_t t = 0; t < elems.size(); ++t) {
    const std::int64_t n = elems[t];
    if (n <= 0) continue;
    ++loc_tensors;
    const std::int64_t chunks = ceil_div(n, kChunk);
    std::int64_t first = 0;  // first chunk of t in the current launch
    for (std::int64_t ch = 0; ch < chunks; ++ch) {
      cur.chunks.push_back(std::min(kChunk, n - ch * kChunk));
      const bool tensors_full = loc_tensors == max_tensors && ch == chunks - 1;
      const bool blocks_full = static_cast<std::int64_t>(cur.chunks.size()) == kMaxBlocks;
      if (tensors_full || blocks_full) {
        const std::int64_t done = std::min(n, (ch + 1) * kChunk) - first * kChunk;
        cur.tensors.emplace_back(t, static_cast<double>(done) / static_cast<double>(n));
        out.push_back(std::move(cur));
        cur = MtaLaunch{};
        first = ch + 1;
        loc_tensors = ch == chunks - 1 ? 0 : 1;
      }
    }
    if (first < chunks) {
      const std::int64_t left = n - first * kChunk;
      cur.tensors.emplace_back(t, static_cast<double>(left) / static_cast<double>(n));
    }
  }
  if (!cur.chunks.empty()) out.push_back(std::move(cur));
  return out;
}

// What a list contributes: its element size and whether the kernel loads and stores it.
struct MtaList {
  double elt = 2;
  bool read = true, written = false;
};

std::vector<Launch> mta_launches(const std::vector<std::int64_t>& elems, const std::vector<std::vector<TensorUse>>& lists,
                                 const std::vector<MtaList>& how, std::int64_t max_tensors, const std::string& name,
                                 double fp32_per_elem, double sfu_per_elem, const hw::HardwareSpec& hw) {
  for (const auto& list : lists) {
    if (list.size() != elems.size()) throw ModelError("multi_tensor_apply: every list needs one tensor per size");
  }
  // Lists that name the same tensors (addcmul_'s grads, twice) load it once from DRAM.
  std::vector<bool> duplicate(lists.size(), false);
  for (std::size_t a = 0; a < lists.size(); ++a) {
    for (std::size_t b = 0; b < a; ++b) {
      if (!lists[a].empty() && lists[a].front().tensor == lists[b].front().tensor) duplicate[a] = true;
    }
  }
  double read_per_elem = 0, dram_read_per_elem = 0, write_per_elem = 0;
  for (std::size_t l = 0; l < how.size(); ++l) {
    if (how[l].read) {
      read_per_elem += how[l].elt;
      if (!duplicate[l]) dram_read_per_elem += how[l].elt;
    }
    if (how[l].written) write_per_elem += how[l].elt;
  }
  std::vector<Launch> out;
  for (const MtaLaunch& m : mta_schedule(elems, max_tensors)) {
    Launch l;
    l.name = name;
    l.family = "multi_tensor_apply";
    l.grid = {static_cast<std::int64_t>(m.chunks.size()), 1, 1};
    l.block = {kMtaThreads, 1, 1};
    l.regs_per_thread = 32;
    const auto occ = hw::compute_occupancy(hw.sm, hw::BlockResources{static_cast<int>(kMtaThreads), 32, 0});
    const double sharing = static_cast<double>(
        std::clamp<std::int64_t>(ceil_div(l.grid.x, hw.sm_count), 1, std::max(1, occ.ctas_per_sm)));
    for (const std::int64_t n : m.chunks) {
      hw::CtaWork w;
      const double x = static_cast<double>(n);
      w.fp32_flops = fp32_per_elem * x;
      w.sfu_ops = sfu_per_elem * x;
      w.l2_bytes = (read_per_elem + write_per_elem) * x;
      w.dram_read_bytes = dram_read_per_elem * x;
      w.dram_write_bytes = write_per_elem * x;
      // Each thread's loop iteration: a kILP-element vector of every list it reads, then the
      // math, issued at the SM's FP32 rate shared with the launch's other CTAs on that SM, and
      // the stores.
      const double iterations = static_cast<double>(ceil_div(n, kMtaThreads * kIlp));
      w.max_inflight_bytes = static_cast<double>(kMtaThreads * kIlp) * read_per_elem;
      const double math = sharing * static_cast<double>(kMtaThreads * kIlp) * (fp32_per_elem + sfu_per_elem) /
                          (hw.throughput.fp32 * hw.clocks.sustained_other_hz);
      w.critical_path = sim::Time::from_seconds(
          iterations * (kForeachRoundTripsPerIteration * hw.dram.latency.seconds() + math));
      detail::add_class(l, 1, w);
    }
    for (const auto& [t, share] : m.tensors) {
      for (std::size_t li = 0; li < lists.size(); ++li) {
        TensorUse u = lists[li][t];
        u.bytes = static_cast<std::int64_t>(static_cast<double>(u.bytes) * share);
        if (how[li].read && !duplicate[li]) l.reads.push_back(u);
        if (how[li].written) l.writes.push_back(u);
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

// Lists a foreach functor loads: its template's r_args_depth ("UnaryOpFunctor<T, depth,
// r_args_depth, res_arg_index>"); the other lists are outputs only. nullopt if not spelled so.
std::optional<int> functor_loaded_lists(std::string_view functor) {
  const auto open = functor.find('<');
  const auto close = functor.find('>', open);
  if (open == std::string_view::npos || close == std::string_view::npos) return std::nullopt;
  std::vector<int> nums;
  std::string_view args = functor.substr(open + 1, close - open - 1);
  std::size_t start = 0;
  int field = 0;
  while (start <= args.size()) {
    const std::size_t comma = std::min(args.find(',', start), args.size());
    std::string_view f = args.substr(start, comma - start);
    while (!f.empty() && f.front() == ' ') f.remove_prefix(1);
    if (field > 0) {
      if (f.empty() || !std::all_of(f.begin(), f.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) break;
      nums.push_back(std::stoi(std::string(f)));
    }
    ++field;
    start = comma + 1;
  }
  if (nums.size() < 2) return std::nullopt;
  return nums[1];
}

}  // namespace

std::vector<Launch> lower_multi_tensor_apply(const std::vector<std::int64_t>& elems, hw::DType dtype,
                                             const std::vector<std::vector<TensorUse>>& lists, int written,
                                             std::string_view functor, double flops_per_elem,
                                             const hw::HardwareSpec& hw) {
  const auto depth = static_cast<std::int64_t>(lists.size());
  if (depth < 1 || depth > 5) throw ModelError("multi_tensor_apply: 1 to 5 tensor lists");
  if (written < 0 || written > depth) throw ModelError("multi_tensor_apply: written lists out of range");
  // TensorListMetadata holds depth_to_max_tensors addresses per list; the scalar-list variant
  // (one scalar per tensor, as _foreach_div_ by a list) has room for 96 at depth 1.
  const bool scalar_list = functor.find("ScalarList") != std::string_view::npos;
  constexpr std::int64_t kMaxTensors[5] = {110, 64, 48, 36, 30};
  const std::int64_t max_tensors = scalar_list && depth == 1 ? 96 : kMaxTensors[depth - 1];
  const std::string meta = scalar_list ? fmt::format("TensorListScalarListMetadata<float, {}>", depth)
                                       : fmt::format("TensorListMetadata<{}>", depth);
  const std::string name = fmt::format(
      "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::{}, "
      "at::native::(anonymous namespace)::{}{}>",
      meta, functor, functor.ends_with('>') ? " " : "");  // demangled as "> >"
  // Out-of-place functors (sqrt into a new list) load fewer lists than they touch: those not
  // loaded are the outputs, which the caller lists first.
  const int loaded = std::clamp(functor_loaded_lists(functor).value_or(static_cast<int>(depth)), 0, static_cast<int>(depth));
  std::vector<MtaList> how(static_cast<std::size_t>(depth));
  for (std::int64_t li = 0; li < depth; ++li) {
    how[static_cast<std::size_t>(li)] = {detail::elt_bytes(dtype), li >= depth - loaded, li < written};
  }
  return mta_launches(elems, lists, how, max_tensors, name, flops_per_elem, 0.0, hw);
}

std::vector<Launch> lower_fused_adamw(const std::vector<std::int64_t>& elems, hw::DType param_dtype,
                                      hw::DType state_dtype, const std::vector<std::vector<TensorUse>>& lists,
                                      const hw::HardwareSpec& hw) {
  if (lists.size() != 4) throw ModelError("fused AdamW: params, grads, exp_avgs and exp_avg_sqs");
  const std::string name = fmt::format(
      "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
      "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<{}, "
      "4, (at::native::ADAM_MODE)1, false>, float const*, double, double, double, double, double, bool, float "
      "const*, float const*>",
      detail::aten_type_name(param_dtype));
  const double p = detail::elt_bytes(param_dtype), s = detail::elt_bytes(state_dtype);
  // All four loaded; params and both moments stored.
  const std::vector<MtaList> how = {{p, true, true}, {p, true, false}, {s, true, true}, {s, true, true}};
  // Per element: the gradient's and moments' conversions and a square root in FP32, the rest in
  // FP64 (see kFusedAdamFp64OpsPerElem).
  return mta_launches(elems, lists, how, 36, name, 8.0 + kFp64FlopsEquivalent * kFusedAdamFp64OpsPerElem, 1.0, hw);
}

}  // namespace gpusim::models
