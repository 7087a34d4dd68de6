// Kernel cost models: one per kernel family, each lowering an op to the launches the real
// library (cuBLAS, FlashAttention, ATen) makes for it on a given chip.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hw/hardware_spec.h"
#include "hw/launch.h"
#include "models/op.h"

namespace gpusim::models {

using hw::CtaClass;
using hw::CtaWork;
using hw::Dim3;
using hw::Launch;
using hw::TensorUse;

class KernelModel {
 public:
  virtual ~KernelModel() = default;
  // `tag` is unique per op in the workload ("op3"); tensors are named "<tag>.<name>" so that
  // kernels of one op can share them through L2 and ops do not alias each other's data.
  virtual std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw,
                                    const std::string& tag) const = 0;
};

// Which model lowers which op kind. Built by default_kernel_models(); no global registry.
class KernelModelRegistry {
 public:
  void add(OpKind kind, std::shared_ptr<const KernelModel> model);
  // Throws ModelError when no model handles the kind.
  const KernelModel& model_for(OpKind kind) const;
  std::vector<Launch> lower(const Op& op, const hw::HardwareSpec& hw, const std::string& tag) const;

 private:
  std::map<OpKind, std::shared_ptr<const KernelModel>> models_;
};

// Every shipped family, one registration line each (models/registry.cpp).
KernelModelRegistry default_kernel_models();

}  // namespace gpusim::models
