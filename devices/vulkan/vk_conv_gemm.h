// devices/vulkan private: the convolution ops on Vulkan. A convolution (`conv`) runs as an
// implicit GEMM on the tiled matmul kernel: per image and group, C[K/G, L] = W[K/G, C/G * kk]
// @ cols[C/G * kk, L], where B's loader computes each element of the columns from the image
// (zero where the window hangs over the padding) instead of reading them from memory; the bias
// is added in the store, and an anchored group's epilogue (MatmulEpilogue) runs there too. On
// GPUs with tensor cores an f16 convolution may run as the same implicit GEMM on the
// cooperative-matrix kernel (bias as an add after it) or as the explicit GEMM (unfold + matmul),
// whichever the autotuner times fastest. The
// gradients (conv_input_grad, conv_weight_grad) run as steps on the device's own kernels:
// matmul + fold, and unfold + matmul (vk_conv_grad.cpp).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "kiln/devices/vulkan/vk_matmul.h"

namespace kiln::vk {

// Where a conv anchor's epilogue finds its parameters: after the implicit GEMM's own words.
inline constexpr const char* kConvEpilogueBase = "(8u + 3u * arg_u32(7u) + 18u)";

// A conv op with an epilogue (its parameters in `epilogue.args`, GLSL on kConvEpilogueBase);
// y may be null when the epilogue does not store C. Inputs x, weight and bias (null: none).
void conv_with_epilogue(VulkanDevice& dev, const OpIr& op, const Buffer* x, const Buffer* weight, const Buffer* bias,
                        const Buffer* y, const MatmulEpilogue& epilogue);

// A tensor of the steps below (id 0 until step() numbers it).
TensorIr step_tensor(Shape shape, DType dtype);
// Runs one op on the device's kernel for it: a step of a composite that runs below the op
// (vk_conv_grad.cpp). The operands get distinct ids.
void run_step(VulkanDevice& dev, OpKind kind, std::initializer_list<std::pair<TensorIr, Buffer*>> inputs,
              const TensorIr& output, Buffer* out, OpAttrs attrs = {});

// The cooperative-matrix kernel with B gathered from the image: the implicit GEMM of an f16
// convolution (the argument block of vk_conv_gemm.cpp's launcher).
std::string conv_coop_source(const std::string& prelude, CoopShape shape, const CoopConfig& config);

// Test hook: the convolutions run on the cooperative-matrix kernel in this process so far.
std::uint64_t coop_convolutions();

void register_conv_gemm_kernels(KernelTable& t);  // conv (vk_conv_gemm.cpp)
void register_conv_grad_kernels(KernelTable& t);  // conv_input_grad, conv_weight_grad

}  // namespace kiln::vk
