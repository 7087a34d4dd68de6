// The registry of kernel families: which model lowers which op kind.
#include <fmt/format.h>

#include <utility>

#include "models/families.h"
#include "models/kernel_model.h"
#include "sim/error.h"

namespace gpusim::models {

void KernelModelRegistry::add(OpKind kind, std::shared_ptr<const KernelModel> model) {
  models_[kind] = std::move(model);
}

const KernelModel& KernelModelRegistry::model_for(OpKind kind) const {
  const auto it = models_.find(kind);
  if (it == models_.end() || !it->second) {
    throw ModelError(fmt::format("no kernel model lowers op '{}'", op_name(kind)));
  }
  return *it->second;
}

std::vector<Launch> KernelModelRegistry::lower(const Op& op, const hw::HardwareSpec& hw,
                                               const std::string& tag) const {
  return model_for(op.kind()).lower(op, hw, tag);
}

KernelModelRegistry default_kernel_models() {
  KernelModelRegistry r;
  auto gemm = std::make_shared<const GemmModel>();
  auto elementwise = std::make_shared<const ElementwiseModel>();
  auto rows = std::make_shared<const RowReductionModel>();
  r.add(OpKind::kMatmul, gemm);
  r.add(OpKind::kLinear, gemm);
  r.add(OpKind::kSdpa, std::make_shared<const FlashAttentionModel>());
  r.add(OpKind::kSdpaDecode, std::make_shared<const DecodeAttentionModel>());
  r.add(OpKind::kNaiveAttention, std::make_shared<const NaiveAttentionModel>());
  r.add(OpKind::kAdd, elementwise);
  r.add(OpKind::kMul, elementwise);
  r.add(OpKind::kSilu, elementwise);
  r.add(OpKind::kGelu, elementwise);
  r.add(OpKind::kCast, elementwise);
  r.add(OpKind::kLayerNorm, rows);
  r.add(OpKind::kRmsNorm, rows);
  r.add(OpKind::kSoftmax, rows);
  r.add(OpKind::kCopy, elementwise);
  r.add(OpKind::kRope, std::make_shared<const RopeModel>());
  auto collective = std::make_shared<const CollectiveOpModel>();
  for (const OpKind k : {OpKind::kAllReduce, OpKind::kAllGather, OpKind::kReduceScatter, OpKind::kAllToAll,
                         OpKind::kSendRecv}) {
    r.add(k, collective);
  }
  return r;
}

}  // namespace gpusim::models
