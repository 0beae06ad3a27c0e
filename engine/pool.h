// Pooling over 1 or 2 spatial dims with torch.nn.functional's semantics: max pooling (padding
// that never wins, dilation, ceil_mode, the indices torch returns), average pooling
// (count_include_pad, ceil_mode divisors) and adaptive pooling. Max and average pooling are one
// op each, with gradient ops of their own (max pooling's gradient goes to the chosen element
// only, the first maximum of its window, or its last NaN, as in torch; overlapping windows add
// up); a device without their kernels runs them as unfold and reductions. Adaptive pooling whose
// windows are uniform (out divides in) is plain pooling; otherwise a composite of matmuls or
// gathers and reductions.
#pragma once
#include "kiln/engine/unfold.h"

namespace kiln {

// Window values: one per spatial dim, or one for all of them.
struct PoolOptions {
  Window kernel{};
  Window stride{};     // empty: the kernel
  Window padding{0};   // at most half the kernel, as torch requires
  Window dilation{1};  // max pooling only
  // Cover the input's end with one more window when it starts inside the input or the left
  // padding (torch's rule).
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling: divide by the window's size with padding
};

// values, and for each the position of the chosen element in its input plane: i64 flat index
// (h * W + w for 2-D), as torch returns.
struct PoolResult {
  Tensor values;
  Tensor indices;
};

// x [N, C, *spatial] or unbatched [C, *spatial]; the result keeps that form.
Tensor max_pool1d(Tensor x, const PoolOptions& o);
Tensor max_pool2d(Tensor x, const PoolOptions& o);
PoolResult max_pool1d_with_indices(Tensor x, const PoolOptions& o);
PoolResult max_pool2d_with_indices(Tensor x, const PoolOptions& o);
Tensor avg_pool1d(Tensor x, const PoolOptions& o);
Tensor avg_pool2d(Tensor x, const PoolOptions& o);

// Output position i of a dim of size in pools [floor(i in / out), ceil((i + 1) in / out)).
Tensor adaptive_avg_pool1d(Tensor x, const Window& output_size);
Tensor adaptive_avg_pool2d(Tensor x, const Window& output_size);
Tensor adaptive_max_pool1d(Tensor x, const Window& output_size);
Tensor adaptive_max_pool2d(Tensor x, const Window& output_size);
PoolResult adaptive_max_pool1d_with_indices(Tensor x, const Window& output_size);
PoolResult adaptive_max_pool2d_with_indices(Tensor x, const Window& output_size);

}  // namespace kiln
