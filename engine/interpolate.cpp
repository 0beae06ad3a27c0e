// Resizing as one pass per spatial dim (W, then H, the order of torch's CPU kernel): nearest is
// an index_select of the source rows; bilinear is two index_selects weighted by their lambdas.
// Source indices and lambdas are computed on the host in f32, exactly as torch's upsample
// kernels compute them (its compute_scales_value, area_pixel_compute_source_index, and the
// shortcuts for out == in and, for nearest, out == 2 in).
#include "kiln/engine/interpolate.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "kiln/engine/creation.h"
#include "kiln/engine/elementwise.h"
#include "kiln/engine/index.h"
#include "kiln/engine/window_args.h"

namespace kiln {

namespace {

constexpr const char* kOp = "interpolate2d";

struct Axis {
  std::int64_t in = 0, out = 0;
  std::optional<double> scale_factor;  // as given; the scale is then its inverse
};

float scale_of(const Axis& a) {
  return a.scale_factor ? static_cast<float>(1.0 / *a.scale_factor)
                        : static_cast<float>(a.in) / static_cast<float>(a.out);
}

Tensor nearest_along(Tensor y, int dim, const Axis& a) {
  if (a.out == a.in) return y;
  const float scale = scale_of(a);
  std::vector<std::int64_t> src;
  for (std::int64_t i = 0; i < a.out; ++i)
    src.push_back(a.out == 2 * a.in
                      ? i >> 1
                      : std::min(static_cast<std::int64_t>(std::floor(static_cast<float>(i) * scale)), a.in - 1));
  const Device device = y.device();
  return index_select(std::move(y), dim, from_vector(std::move(src), Shape{a.out}, device));
}

Tensor linear_along(Tensor y, int dim, const Axis& a, bool align_corners) {
  if (a.out == a.in) return y;
  float ratio = scale_of(a);
  if (align_corners) ratio = a.out > 1 ? static_cast<float>(a.in - 1) / static_cast<float>(a.out - 1) : 0.0f;
  std::vector<std::int64_t> i0s, i1s;
  std::vector<float> l0s, l1s;
  for (std::int64_t i = 0; i < a.out; ++i) {
    const auto dst = static_cast<float>(i);
    const float src = align_corners ? ratio * dst : std::max(ratio * (dst + 0.5f) - 0.5f, 0.0f);
    const auto i0 = static_cast<std::int64_t>(src);
    const float l1 = std::clamp(src - static_cast<float>(i0), 0.0f, 1.0f);
    i0s.push_back(i0);
    i1s.push_back(i0 + (i0 < a.in - 1 ? 1 : 0));
    l0s.push_back(1.0f - l1);
    l1s.push_back(l1);
  }
  const Device device = y.device();
  const Shape lambda_shape = dim == 3 ? Shape{a.out} : Shape{a.out, 1};
  Tensor lo = index_select(y, dim, from_vector(std::move(i0s), Shape{a.out}, device));
  Tensor hi = index_select(std::move(y), dim, from_vector(std::move(i1s), Shape{a.out}, device));
  // f32 lambdas: a 16-bit input is computed in f32 and rounded once at the end.
  return add(mul(std::move(lo), from_vector(std::move(l0s), lambda_shape, device)),
             mul(std::move(hi), from_vector(std::move(l1s), lambda_shape, device)));
}

Tensor resize(const Tensor& x, Axis h, Axis w, InterpolateMode mode, bool align_corners) {
  KILN_CHECK(h.out > 0 && w.out > 0, kOp,
             "the output size [" + std::to_string(h.out) + ", " + std::to_string(w.out) + "] of input " +
                 detail::describe(x) + " must be positive");
  KILN_CHECK(mode != InterpolateMode::nearest || !align_corners, kOp,
             "align_corners is for bilinear mode only, not nearest");
  Tensor y = x;
  if (mode == InterpolateMode::nearest) {
    y = nearest_along(nearest_along(std::move(y), 3, w), 2, h);
  } else {
    y = linear_along(linear_along(std::move(y), 3, w, align_corners), 2, h, align_corners);
    if (y.dtype() != x.dtype()) y = cast(std::move(y), x.dtype());
  }
  return y;
}

// [N, C, H, W] only: torch's interpolate takes no unbatched images (a 3-D input is 1-D resizing).
Tensor checked_input(const Tensor& x) { return detail::batched_input(kOp, x, 2, /*allow_unbatched=*/false).x; }

}  // namespace

Tensor interpolate2d(Tensor x, const Window& size, InterpolateMode mode, bool align_corners) {
  const Tensor in = checked_input(x);
  const Window out = detail::per_dim(kOp, "size", size, 2, 1);
  return resize(in, {in.size(2), out[0], std::nullopt}, {in.size(3), out[1], std::nullopt}, mode, align_corners);
}

Tensor interpolate2d(Tensor x, const std::vector<double>& scale_factor, InterpolateMode mode, bool align_corners) {
  const Tensor in = checked_input(x);
  KILN_CHECK(scale_factor.size() == 1 || scale_factor.size() == 2, kOp,
             "scale_factor must hold one value or two, got " + std::to_string(scale_factor.size()));
  Axis axes[2];
  for (int d = 0; d < 2; ++d) {
    const double f = scale_factor[scale_factor.size() == 1 ? 0 : d];
    KILN_CHECK(std::isfinite(f) && f > 0, kOp, "scale_factor must be positive, got " + std::to_string(f));
    axes[d] = {in.size(2 + d), static_cast<std::int64_t>(std::floor(static_cast<double>(in.size(2 + d)) * f)), f};
  }
  return resize(in, axes[0], axes[1], mode, align_corners);
}

}  // namespace kiln
