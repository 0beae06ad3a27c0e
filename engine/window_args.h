// Pieces shared by the sliding-window composites (conv.cpp, pool.cpp, adaptive_pool.cpp,
// interpolate.cpp): PyTorch's int-or-tuple windows, the optional batch dim, the checks every one
// of them makes, and max pooling over windows with the indices torch returns. Not public API.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/engine/describe.h"
#include "kiln/engine/pool.h"
#include "kiln/engine/unfold.h"

namespace kiln::detail {

// `w` as one value per spatial dim: itself, or its single value repeated. kiln::Error naming
// `op` and `what` when it has another length or a value below `min_value`.
Window per_dim(const char* op, const char* what, const Window& w, int dims, std::int64_t min_value);

// A floating-point input of rank dims + 2 ([N, C, *spatial]), or of rank dims + 1 (unbatched,
// [C, *spatial]) when `allow_unbatched`; returns it with the batch dim (unbatched gets N = 1).
struct BatchedInput {
  Tensor x;
  bool unbatched = false;
};
BatchedInput batched_input(const char* op, const Tensor& x, int dims, bool allow_unbatched = true);
// Drops the batch dim again for an unbatched input.
Tensor unbatched_result(Tensor y, bool unbatched);

// [N, C, *out] from a result laid out [N, C, L] (or [N, K, L]).
Tensor to_spatial(Tensor y, std::int64_t n, std::int64_t c, const Window& out);

// Where the elements of pooling windows lie: along[d][i * kernel[d] + a] is the coordinate in
// spatial dim d that kernel offset a of output position i reads (always inside the input).
struct WindowCoords {
  std::vector<std::vector<std::int64_t>> along;
  Window kernel, out, in;
};

// Max pooling's result from its windows [N, C, kk, L] (kk kernel offsets row-major, L output
// positions row-major): the first maximum of each window, and with `with_indices` its flat
// position in the input plane (i64), both [N, C, *out]. The gradient of the values goes to the
// chosen element only (max's backward rule).
PoolResult max_of_windows(Tensor windows, const WindowCoords& coords, bool with_indices);

// A host vector as a tensor of `dtype` on `device` (f32 uploaded, then cast when different).
Tensor constant(std::vector<float> values, const Shape& shape, DType dtype, Device device);

}  // namespace kiln::detail
