// Sliding windows: unfold (im2col) and its adjoint fold (col2im), over 1 to 3 spatial dims.
// They are the primitives convolution, transposed convolution and pooling are built from
// (engine/conv.h, engine/pool.h): a convolution is a matmul of the weights with the unfolded
// input, a transposed convolution folds a matmul's columns back into an image.
//
// Each window parameter (kernel, dilation, padding, stride) holds one value for every spatial
// dim, or a single value used for all of them (PyTorch's int-or-tuple arguments).
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln {

using Window = std::vector<std::int64_t>;

// x: [N, C, *spatial] (1 to 3 spatial dims) -> [N, C * prod(kernel), L], L = prod(out), where
// out[d] = (spatial[d] + 2 padding[d] - dilation[d] (kernel[d] - 1) - 1) / stride[d] + 1.
// Row c * prod(kernel) + k holds channel c at kernel offset k (row-major over the kernel dims),
// column l the window at output position l (row-major over the out dims) — torch's F.unfold
// layout. Positions in the padding read `pad_value` (0 for convolution, -inf for max pooling).
Tensor unfold(Tensor x, const Window& kernel, const Window& dilation, const Window& padding, const Window& stride,
              double pad_value = 0.0);

// The adjoint of unfold: cols [N, C * prod(kernel), L] -> [N, C, *output_size], each column's
// values added into the window they came from (overlaps sum; padding positions are dropped).
// L must equal the number of windows that unfold would take of an [N, C, *output_size] input.
Tensor fold(Tensor cols, const Window& output_size, const Window& kernel, const Window& dilation,
            const Window& padding, const Window& stride);

}  // namespace kiln
