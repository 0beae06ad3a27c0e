// devices/vulkan private: anchored fused groups (ops/fused_expr.h, FusedAnchor) on Vulkan. A
// plain reduction of f32 or 16-bit floats takes its prologue into its load and its epilogue into
// its store; a matmul takes its epilogue into the tiled kernel's store, a convolution into its
// implicit GEMM's (vk_conv_gemm.h). Anything else (a
// prologue on a reduction whose reduced dims need a gather, a 16-bit product that the
// tensor-core kernels take) runs as AnchoredSteps.
#pragma once
#include <memory>

#include "kiln/devices/device.h"

namespace kiln::vk {

class VulkanDevice;

std::shared_ptr<CompiledKernel> compile_anchored(VulkanDevice& dev, const FusedExpr& expr);
void run_anchored(VulkanDevice& dev, const CompiledKernel& kernel, const FusedExpr& expr, const KernelArgs& args);

}  // namespace kiln::vk
