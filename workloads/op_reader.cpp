#include "workloads/op_reader.h"

#include <fmt/format.h>

#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace gpusim::workloads {
namespace {

using models::OpKind;

constexpr std::int64_t kMaxExtent = std::int64_t{1} << 40;

// The keys each op takes besides `op`.
std::vector<std::string_view> keys_of(OpKind kind) {
  switch (kind) {
    case OpKind::kMatmul:
      return {"M", "N", "K", "dtype"};
    case OpKind::kLinear:
      return {"M", "N", "K", "bias", "dtype"};
    case OpKind::kSdpa:
      return {"B", "H", "S", "D", "causal", "window", "mask", "keys", "dtype"};
    case OpKind::kSdpaDecode:
      return {"B", "Hq", "Hkv", "L", "D", "dtype"};
    case OpKind::kNaiveAttention:
      return {"B", "H", "S", "D", "causal", "softmax", "pass", "dtype"};
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSilu:
    case OpKind::kGelu:
    case OpKind::kCopy:
      return {"n", "strided", "dtype"};
    case OpKind::kRope:
      return {"B", "S", "H", "D", "dtype"};
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
    case OpKind::kSendRecv:
      return {"n", "bytes", "gpus", "dtype"};
    case OpKind::kCast:
      return {"n", "from", "to"};  // the types are from and to
    case OpKind::kLayerNorm:
    case OpKind::kRmsNorm:
    case OpKind::kSoftmax:
      return {"R", "C", "dtype"};
  }
  return {};
}

models::OpShape read_shape(OpKind kind, hw::MappingReader& r) {
  const auto dim = [&r](std::string_view key) { return r.integer(key, 1, kMaxExtent); };
  switch (kind) {
    case OpKind::kMatmul:
      return models::MatmulShape{dim("M"), dim("N"), dim("K")};
    case OpKind::kLinear:
      return models::LinearShape{dim("M"), dim("N"), dim("K"),
                                 r.optional_boolean("bias").value_or(false)};
    case OpKind::kSdpa:
    {
      models::SdpaShape s{dim("B"), dim("H"), dim("S"), dim("D"), r.boolean("causal")};
      s.window = r.optional_integer("window", 1, kMaxExtent).value_or(0);
      if (s.window > 0 && !s.causal) r.fail("window", "a sliding window needs causal: true");
      s.masked = r.optional_boolean("mask").value_or(false);
      if (s.masked && (s.causal || s.window > 0)) {
        r.fail("mask", "an explicit mask replaces causal: and window: (set causal: false)");
      }
      // Keys when they differ from the S queries (a packed batch's masked attention).
      s.keys = r.optional_integer("keys", 1, kMaxExtent).value_or(0);
      if (s.keys > 0 && (s.causal || s.window > 0)) r.fail("keys", "queries and keys of different lengths need causal: false");
      return s;
    }
    case OpKind::kSdpaDecode: {
      const models::SdpaDecodeShape s{dim("B"), dim("Hq"), dim("Hkv"), dim("L"), dim("D")};
      if (s.Hq % s.Hkv != 0) {
        r.fail("Hkv", fmt::format("Hq ({}) is not a multiple of Hkv ({})", s.Hq, s.Hkv));
      }
      return s;
    }
    case OpKind::kNaiveAttention: {
      models::NaiveAttentionShape s{dim("B"), dim("H"), dim("S"), dim("D"),
                                    r.optional_boolean("causal").value_or(false)};
      // `softmax: manual` writes the softmax out (cs336_basics); `pass: backward` is autograd's
      // backward of the attention instead of its forward.
      s.manual_softmax = r.has("softmax") && r.choice("softmax", {"fused", "manual"}) == "manual";
      s.backward = r.has("pass") && r.choice("pass", {"forward", "backward"}) == "backward";
      return s;
    }
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSilu:
    case OpKind::kGelu:
    case OpKind::kCopy:
      return models::ElementwiseShape{dim("n"), r.optional_boolean("strided").value_or(false)};
    case OpKind::kRope: {
      const models::RopeShape s{dim("B"), dim("S"), dim("H"), dim("D")};
      if (s.D % 2 != 0) r.fail("D", fmt::format("RoPE rotates pairs of dimensions: D ({}) must be even", s.D));
      return s;
    }
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
    case OpKind::kSendRecv:
      break;  // read_collective: its size depends on the dtype
    case OpKind::kCast: {
      const std::int64_t n = dim("n");
      const auto from = read_optional_dtype(r, "from");
      if (!from) r.fail("from", "missing required key");
      const auto to = read_optional_dtype(r, "to");
      if (!to) r.fail("to", "missing required key");
      if (*from == *to) r.fail("to", "is the same as from; such a cast launches nothing");
      return models::CastShape{n, *from, *to};
    }
    case OpKind::kLayerNorm:
    case OpKind::kRmsNorm:
    case OpKind::kSoftmax:
      return models::RowShape{dim("R"), dim("C")};
  }
  r.fail("op", "unhandled op");
}

// Byte counts are 64-bit integers: a tensor of more than 2^56 elements (2^58 bytes at 4 bytes
// each, leaving room for sums of several) cannot be counted. Each op's largest tensor, with a
// name for the message.
constexpr double kMaxTensorElements = 0x1p56;

struct Tensor {
  std::string name;
  double elements;
};

std::vector<Tensor> tensors_of(const models::OpShape& shape) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  return std::visit(
      [&](const auto& s) -> std::vector<Tensor> {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, models::MatmulShape> || std::is_same_v<S, models::LinearShape>) {
          return {{"A[M,K]", d(s.M) * d(s.K)}, {"B[K,N]", d(s.K) * d(s.N)}, {"C[M,N]", d(s.M) * d(s.N)}};
        } else if constexpr (std::is_same_v<S, models::SdpaShape>) {
          const double keys = d(s.keys > 0 ? s.keys : s.S);
          return {{"Q[B,H,S,D]", d(s.B) * d(s.H) * d(s.S) * d(s.D)}, {"K[B,H,keys,D]", d(s.B) * d(s.H) * keys * d(s.D)},
                  {"the mask [B,S,keys]", s.masked ? d(s.B) * d(s.S) * keys : 0}};
        } else if constexpr (std::is_same_v<S, models::SdpaDecodeShape>) {
          return {{"Q[B,Hq,D]", d(s.B) * d(s.Hq) * d(s.D)}, {"the KV cache [B,Hkv,L,D]", d(s.B) * d(s.Hkv) * d(s.L) * d(s.D)}};
        } else if constexpr (std::is_same_v<S, models::NaiveAttentionShape>) {
          return {{"Q[B,H,S,D]", d(s.B) * d(s.H) * d(s.S) * d(s.D)}, {"the scores [B,H,S,S]", d(s.B) * d(s.H) * d(s.S) * d(s.S)}};
        } else if constexpr (std::is_same_v<S, models::RowShape>) {
          return {{"x[R,C]", d(s.R) * d(s.C)}};
        } else if constexpr (std::is_same_v<S, models::RopeShape>) {
          return {{"x[B,H,S,D]", d(s.B) * d(s.H) * d(s.S) * d(s.D)}};
        } else if constexpr (std::is_same_v<S, models::CollectiveShape>) {
          return {{"the buffer", d(s.bytes)}};
        } else {
          return {{"x[n]", d(s.n)}};
        }
      },
      shape);
}

// A collective's size: `n` elements of its dtype or `bytes` (exactly one), and its group of
// `gpus` GPUs. Whether the system has that many is checked when lowering (workloads/op_lowering.h).
models::CollectiveShape read_collective(hw::MappingReader& r, hw::DType dtype) {
  const bool has_n = r.has("n"), has_bytes = r.has("bytes");
  if (has_n == has_bytes) {
    r.fail(has_n ? "bytes" : "n", "give the buffer's size as either n (elements of dtype) or bytes, not both");
  }
  const std::int64_t bytes = has_n ? r.integer("n", 1, kMaxExtent) * static_cast<std::int64_t>(hw::bytes_per_element(dtype))
                                   : r.integer("bytes", 1, kMaxExtent);
  const int gpus = static_cast<int>(r.integer("gpus", 2, 1 << 20));
  return models::CollectiveShape{bytes, gpus};
}

}  // namespace

std::optional<hw::DType> read_optional_dtype(hw::MappingReader& reader, std::string_view key) {
  const auto text = reader.optional_text(key);
  if (!text) return std::nullopt;
  const auto dtype = hw::parse_dtype(*text);
  if (!dtype) {
    reader.fail(key, fmt::format("'{}' is not a dtype (one of: {})", *text, hw::dtype_names()));
  }
  return dtype;
}

models::Op read_op(const hw::YamlDocument& doc, const YAML::Node& item, const std::string& key_path,
                   std::optional<hw::DType> default_dtype) {
  hw::MappingReader r(doc, item, key_path);
  const OpKind kind = *models::parse_op_kind(r.choice("op", models::op_names()));
  // Unknown keys first, so that a misspelt key is not reported as a missing one.
  for (const auto key : keys_of(kind)) r.has(key);
  r.reject_unknown();

  if (models::is_collective(kind)) {
    const auto dtype = read_optional_dtype(r, "dtype");
    if (!dtype && !default_dtype) {
      r.fail("dtype", "missing: give this op a dtype, or the workload a top-level dtype");
    }
    const hw::DType d = dtype ? *dtype : *default_dtype;
    return models::Op(kind, d, read_collective(r, d));
  }
  models::OpShape shape = read_shape(kind, r);
  for (const Tensor& t : tensors_of(shape)) {
    if (t.elements > kMaxTensorElements) {
      doc.fail(item, key_path, fmt::format("{} would hold {:.3g} elements, more than gpusim counts in 64-bit byte counts "
                               "(at most 2^56 elements a tensor)",
                               t.name, t.elements));
    }
  }
  if (kind == OpKind::kCast) {
    const hw::DType to = std::get<models::CastShape>(shape).to;
    return models::Op(kind, to, shape);
  }
  const auto dtype = read_optional_dtype(r, "dtype");
  if (!dtype && !default_dtype) {
    r.fail("dtype", "missing: give this op a dtype, or the workload a top-level dtype");
  }
  return models::Op(kind, dtype ? *dtype : *default_dtype, shape);
}

}  // namespace gpusim::workloads
