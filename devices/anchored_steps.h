// An anchored fused expression (ops/fused_expr.h, FusedAnchor) run as its three steps on any
// device: the prologue as a fused elementwise kernel into a temporary, the anchor op with the
// device's own kernel, the epilogue as a fused elementwise kernel. A device whose kernels
// cannot take a prologue or epilogue in yet runs anchored groups this way: the values are
// those of the unfused ops, and only the launches and the plan are shared.
#pragma once
#include <memory>

#include "kiln/devices/device.h"

namespace kiln {

class AnchoredSteps final : public CompiledKernel {
 public:
  AnchoredSteps(DeviceBackend& device, const FusedExpr& expr);
  void run(DeviceBackend& device, const FusedExpr& expr, const KernelArgs& args) const;

 private:
  std::shared_ptr<CompiledKernel> prologue_, epilogue_;
};

}  // namespace kiln
