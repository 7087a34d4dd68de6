// The collective ops (allreduce, allgather, reducescatter, alltoall, sendrecv) of op-level
// workloads: one NCCL kernel per GPU as models/collective_model.h plans it on the system the
// chip belongs to. The group fills one node before spanning several (as torchrun places ranks).
#include <fmt/format.h>

#include <algorithm>

#include "models/collective_model.h"
#include "models/common.h"
#include "models/families.h"
#include "sim/error.h"

namespace gpusim::models {
namespace {

Collective collective_of(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce: return Collective::kAllReduce;
    case OpKind::kAllGather: return Collective::kAllGather;
    case OpKind::kReduceScatter: return Collective::kReduceScatter;
    case OpKind::kAllToAll: return Collective::kAllToAll;
    case OpKind::kSendRecv: return Collective::kSendRecv;
    default: break;
  }
  throw ModelError(fmt::format("collective: cannot lower {}", op_name(kind)));
}

}  // namespace

std::vector<Launch> CollectiveOpModel::lower(const Op& op, const hw::HardwareSpec& hw, const std::string& tag) const {
  const auto& s = op.as<CollectiveShape>();
  const CollectiveProblem p{collective_of(op.kind()), static_cast<double>(s.bytes), s.gpus,
                            std::min(s.gpus, std::max(1, hw.system.gpus)), op.dtype()};
  const CollectivePlan plan = plan_collective(p, hw);
  // Each GPU's buffers: all-gather reads its 1/n and writes the whole, reduce-scatter the reverse.
  const double n = s.gpus;
  const double in = p.kind == Collective::kAllGather ? p.bytes / n : p.bytes;
  const double out = p.kind == Collective::kReduceScatter ? p.bytes / n : p.bytes;
  return {collective_launch(p, plan, hw, detail::tensor(tag, "in", in), detail::tensor(tag, "out", out))};
}

}  // namespace gpusim::models
