#include "workloads/op_reader.h"

#include <fmt/format.h>

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
      return {"n", "dtype"};
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
      return models::ElementwiseShape{dim("n")};
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

  models::OpShape shape = read_shape(kind, r);
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
