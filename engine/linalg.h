// Matrix products, with torch.matmul's rules: 1-D operands are promoted and the added dim
// removed again; batch dims broadcast.
#pragma once
#include "kiln/engine/tensor.h"

namespace kiln {

// Which operands enter the product transposed (their last two dims swapped): matmul(a, b,
// {.transpose_b = true}) is a @ bᵀ, as a Linear layer's x @ Wᵀ. Where the device reads an
// operand transposed in place (the CPU through BLAS's flags, Vulkan's tiled kernel), nothing is
// copied; elsewhere the transpose is materialized first. A transposed operand needs 2 or more dims.
struct MatmulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
};

Tensor matmul(Tensor a, Tensor b);
Tensor matmul(Tensor a, Tensor b, MatmulOptions options);

}  // namespace kiln
