// Resizing images [N, C, H, W] with torch.nn.functional.interpolate's semantics: nearest
// (source floor(dst * scale)) and bilinear (align_corners either way). Built from index_select
// and elementwise ops, so gradients come from their backward rules.
#pragma once
#include <vector>

#include "kiln/engine/unfold.h"

namespace kiln {

enum class InterpolateMode { nearest, bilinear };

// To `size` (one value per spatial dim, or one for both); scale = in / out.
Tensor interpolate2d(Tensor x, const Window& size, InterpolateMode mode = InterpolateMode::nearest,
                     bool align_corners = false);
// To floor(in * scale_factor); scale = 1 / scale_factor, as torch takes it (its
// recompute_scale_factor unset). align_corners: bilinear only, as in torch.
Tensor interpolate2d(Tensor x, const std::vector<double>& scale_factor, InterpolateMode mode = InterpolateMode::nearest,
                     bool align_corners = false);

}  // namespace kiln
