#include "models/op.h"

#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <utility>

namespace gpusim::models {
namespace {

constexpr std::array kAllKinds{OpKind::kMatmul,     OpKind::kLinear,         OpKind::kSdpa,
                               OpKind::kSdpaDecode, OpKind::kNaiveAttention, OpKind::kAdd,
                               OpKind::kMul,        OpKind::kSilu,           OpKind::kGelu,
                               OpKind::kCast,       OpKind::kLayerNorm,      OpKind::kRmsNorm,
                               OpKind::kSoftmax,    OpKind::kCopy,           OpKind::kRope,
                               OpKind::kAllReduce,  OpKind::kAllGather,      OpKind::kReduceScatter,
                               OpKind::kAllToAll,   OpKind::kSendRecv};

// Index into OpShape of the family each kind takes.
std::size_t family_of(OpKind kind) {
  switch (kind) {
    case OpKind::kMatmul:
      return 0;
    case OpKind::kLinear:
      return 1;
    case OpKind::kSdpa:
      return 2;
    case OpKind::kSdpaDecode:
      return 3;
    case OpKind::kNaiveAttention:
      return 4;
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSilu:
    case OpKind::kGelu:
    case OpKind::kCopy:
      return 5;
    case OpKind::kCast:
      return 6;
    case OpKind::kLayerNorm:
    case OpKind::kRmsNorm:
    case OpKind::kSoftmax:
      return 7;
    case OpKind::kRope:
      return 8;
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
    case OpKind::kSendRecv:
      return 9;
  }
  return std::variant_npos;
}

std::string shape_text(const OpShape& shape) {
  struct Visitor {
    std::string operator()(const MatmulShape& s) const {
      return fmt::format("M={} N={} K={}", s.M, s.N, s.K);
    }
    std::string operator()(const LinearShape& s) const {
      return fmt::format("M={} N={} K={}{}", s.M, s.N, s.K, s.bias ? " bias" : "");
    }
    std::string operator()(const SdpaShape& s) const {
      return fmt::format("B={} H={} S={} D={}{}{}{}{}{}", s.B, s.H, s.S, s.D,
                         s.keys > 0 ? fmt::format(" keys={}", s.keys) : "", s.causal ? " causal" : "",
                         s.window > 0 ? fmt::format(" window={}", s.window) : "",
                         s.masked ? " mask" : "", s.dropout ? " dropout" : "");
    }
    std::string operator()(const SdpaDecodeShape& s) const {
      return fmt::format("B={} Hq={} Hkv={} L={} D={}", s.B, s.Hq, s.Hkv, s.L, s.D);
    }
    std::string operator()(const NaiveAttentionShape& s) const {
      return fmt::format("B={} H={} S={} D={}{}{}{}", s.B, s.H, s.S, s.D, s.causal ? " causal" : "",
                         s.manual_softmax ? " softmax=manual" : "", s.backward ? " backward" : "");
    }
    std::string operator()(const ElementwiseShape& s) const {
      return fmt::format("n={}{}", s.n, s.strided ? " strided" : "");
    }
    std::string operator()(const RopeShape& s) const {
      return fmt::format("B={} S={} H={} D={}", s.B, s.S, s.H, s.D);
    }
    std::string operator()(const CollectiveShape& s) const {
      return fmt::format("bytes={} gpus={}", s.bytes, s.gpus);
    }
    std::string operator()(const CastShape& s) const { return fmt::format("n={}", s.n); }
    std::string operator()(const RowShape& s) const { return fmt::format("R={} C={}", s.R, s.C); }
  };
  return std::visit(Visitor{}, shape);
}

}  // namespace

Op::Op(OpKind kind, hw::DType dtype, OpShape shape)
    : kind_(kind), dtype_(dtype), shape_(std::move(shape)) {
  if (shape_.index() != family_of(kind_)) {
    throw std::invalid_argument(fmt::format("op {}: shape of the wrong family", op_name(kind_)));
  }
  if (kind_ == OpKind::kCast && std::get<CastShape>(shape_).to != dtype_) {
    throw std::invalid_argument("op cast: dtype must be the output type `to`");
  }
}

std::string_view op_name(OpKind kind) {
  switch (kind) {
    case OpKind::kMatmul:
      return "matmul";
    case OpKind::kLinear:
      return "linear";
    case OpKind::kSdpa:
      return "sdpa";
    case OpKind::kSdpaDecode:
      return "sdpa_decode";
    case OpKind::kNaiveAttention:
      return "naive_attention";
    case OpKind::kAdd:
      return "add";
    case OpKind::kMul:
      return "mul";
    case OpKind::kSilu:
      return "silu";
    case OpKind::kGelu:
      return "gelu";
    case OpKind::kCast:
      return "cast";
    case OpKind::kLayerNorm:
      return "layer_norm";
    case OpKind::kRmsNorm:
      return "rms_norm";
    case OpKind::kSoftmax:
      return "softmax";
    case OpKind::kCopy:
      return "copy";
    case OpKind::kRope:
      return "rope";
    case OpKind::kAllReduce:
      return "allreduce";
    case OpKind::kAllGather:
      return "allgather";
    case OpKind::kReduceScatter:
      return "reducescatter";
    case OpKind::kAllToAll:
      return "alltoall";
    case OpKind::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

bool is_collective(OpKind kind) { return family_of(kind) == 9; }

std::optional<OpKind> parse_op_kind(std::string_view name) {
  for (const OpKind k : kAllKinds) {
    if (op_name(k) == name) return k;
  }
  return std::nullopt;
}

std::vector<std::string_view> op_names() {
  std::vector<std::string_view> names;
  for (const OpKind k : kAllKinds) names.push_back(op_name(k));
  return names;
}

std::string describe(const Op& op) {
  std::string types;
  if (op.kind() == OpKind::kCast) {
    const auto& c = op.as<CastShape>();
    types = fmt::format("{}->{}", hw::name(c.from), hw::name(c.to));
  } else {
    types = std::string(hw::name(op.dtype()));
  }
  return fmt::format("{} {} {}", op_name(op.kind()), shape_text(op.shape()), types);
}

}  // namespace gpusim::models
