#include "kiln/data/transforms.h"

#include <algorithm>
#include <string>

#include "kiln/base/error.h"

namespace kiln::data {

namespace {

// The [C, H, W] dims of an image example, checked to agree with its values.
struct ImageDims {
  std::int64_t channels, height, width;
};

ImageDims image_dims(const Example& x, const char* op) {
  KILN_CHECK(x.shape.rank() == 3, op, "expected an image of shape [C, H, W], got shape " + x.shape.str());
  KILN_CHECK(static_cast<std::int64_t>(x.features.size()) == x.shape.numel(), op,
             "the example has " + std::to_string(x.features.size()) + " values, but its shape " + x.shape.str() +
                 " holds " + std::to_string(x.shape.numel()));
  return {x.shape[0], x.shape[1], x.shape[2]};
}

}  // namespace

Example Normalize::operator()(Example x) const {
  constexpr const char* op = "Normalize";
  KILN_CHECK(!mean.empty() && mean.size() == std.size(), op,
             "mean and std need the same number of values (one per channel, or one for all), got " +
                 std::to_string(mean.size()) + " and " + std::to_string(std.size()));
  for (float s : std) KILN_CHECK(s != 0.0f, op, "std must not be zero");
  KILN_CHECK(x.shape.rank() >= 1, op, "expected an example with a channel dimension, got shape " + x.shape.str());
  const std::int64_t channels = x.shape[0];
  KILN_CHECK(mean.size() == 1 || static_cast<std::int64_t>(mean.size()) == channels, op,
             std::to_string(mean.size()) + " means for an example of shape " + x.shape.str() + " (" +
                 std::to_string(channels) + " channels)");
  KILN_CHECK(static_cast<std::int64_t>(x.features.size()) == x.shape.numel(), op,
             "the example has " + std::to_string(x.features.size()) + " values, but its shape " + x.shape.str() +
                 " holds " + std::to_string(x.shape.numel()));
  const std::size_t plane = channels == 0 ? 0 : x.features.size() / static_cast<std::size_t>(channels);
  for (std::size_t c = 0; c < static_cast<std::size_t>(channels); ++c) {
    const float m = mean[mean.size() == 1 ? 0 : c];
    const float s = std[std.size() == 1 ? 0 : c];
    float* values = x.features.data() + c * plane;
    for (std::size_t i = 0; i < plane; ++i) values[i] = (values[i] - m) / s;
  }
  return x;
}

Example RandomCrop::crop_at(const Example& x, std::int64_t top, std::int64_t left) const {
  constexpr const char* op = "RandomCrop";
  const std::int64_t size_h = size.height, size_w = size.width;
  const ImageDims d = image_dims(x, op);
  KILN_CHECK(size_h > 0 && size_w > 0 && padding >= 0, op,
             "the size must be positive and the padding not negative, got size [" + std::to_string(size_h) + ", " +
                 std::to_string(size_w) + "] and padding " + std::to_string(padding));
  const std::int64_t padded_h = d.height + 2 * padding, padded_w = d.width + 2 * padding;
  KILN_CHECK(size_h <= padded_h && size_w <= padded_w, op,
             "a crop of [" + std::to_string(size_h) + ", " + std::to_string(size_w) + "] does not fit an image of " +
                 x.shape.str() + " padded by " + std::to_string(padding));
  KILN_CHECK(top >= 0 && left >= 0 && top + size_h <= padded_h && left + size_w <= padded_w, op,
             "the corner (" + std::to_string(top) + ", " + std::to_string(left) + ") puts the crop outside the " +
                 "padded image of [" + std::to_string(padded_h) + ", " + std::to_string(padded_w) + "]");
  Example out;
  out.shape = Shape{d.channels, size_h, size_w};
  out.features.assign(static_cast<std::size_t>(out.shape.numel()), fill);
  out.label = x.label;
  out.target = x.target;
  // Row r of the crop is row top + r - padding of the image; rows and columns outside it stay `fill`.
  for (std::int64_t c = 0; c < d.channels; ++c)
    for (std::int64_t r = 0; r < size_h; ++r) {
      const std::int64_t src_row = top + r - padding;
      if (src_row < 0 || src_row >= d.height) continue;
      const std::int64_t first = std::max<std::int64_t>(0, padding - left);
      const std::int64_t last = std::min<std::int64_t>(size_w, d.width + padding - left);
      const float* src_row_start = x.features.data() + (c * d.height + src_row) * d.width;
      float* dst = out.features.data() + (c * size_h + r) * size_w;
      for (std::int64_t col = first; col < last; ++col) dst[col] = src_row_start[col + left - padding];
    }
  return out;
}

Example RandomCrop::operator()(const Example& x, Rng& rng) const {
  const ImageDims d = image_dims(x, "RandomCrop");
  const std::int64_t free_h = d.height + 2 * padding - size.height;
  const std::int64_t free_w = d.width + 2 * padding - size.width;
  if (free_h < 0 || free_w < 0 || padding < 0) return crop_at(x, 0, 0);  // reports what is wrong
  const auto top = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(free_h) + 1));
  const auto left = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(free_w) + 1));
  return crop_at(x, top, left);
}

Example horizontal_flip(Example x) {
  KILN_CHECK(x.shape.rank() >= 1 && static_cast<std::int64_t>(x.features.size()) == x.shape.numel(), "horizontal_flip",
             "expected an example with a width dimension whose values fill its shape, got shape " + x.shape.str() +
                 " with " + std::to_string(x.features.size()) + " values");
  const std::int64_t width = x.shape.back();
  if (width == 0) return x;
  for (auto row = x.features.begin(); row != x.features.end(); row += width) std::reverse(row, row + width);
  return x;
}

Example RandomHorizontalFlip::operator()(Example x, Rng& rng) const {
  return rng.chance(p) ? horizontal_flip(std::move(x)) : x;
}

Example OneHot::operator()(Example x) const {
  KILN_CHECK(num_classes > 0, "OneHot", "num_classes must be positive, got " + std::to_string(num_classes));
  KILN_CHECK(x.label >= 0 && x.label < num_classes, "OneHot",
             "label " + std::to_string(x.label) + " is outside [0, " + std::to_string(num_classes) + ")");
  x.target.assign(static_cast<std::size_t>(num_classes), 0.0f);
  x.target[static_cast<std::size_t>(x.label)] = 1.0f;
  return x;
}

}  // namespace kiln::data
