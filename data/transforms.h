// Transforms of Examples, as torchvision defines them, for data::map and data::compose. Images
// are [C, H, W]. A random transform takes the item's Rng (see data/mapped.h) and also offers its
// deterministic step (crop_at, horizontal_flip) for code that chooses the randomness itself.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/data/example.h"
#include "kiln/data/random.h"

namespace kiln::data {

// (x - mean[c]) / std[c] for each channel c of dim 0 (torchvision Normalize); one mean and std
// apply to every channel.
struct Normalize {
  std::vector<float> mean{};
  std::vector<float> std{};
  Example operator()(Example x) const;
};

// The height and width of a crop; one number for a square.
struct CropSize {
  std::int64_t height = 0;
  std::int64_t width = 0;
  CropSize(std::int64_t square) : height(square), width(square) {}  // NOLINT: implicit, as torchvision's int size
  CropSize(std::int64_t height, std::int64_t width) : height(height), width(width) {}
};

// A window of `size` at a random place in the image padded by `padding` pixels of value `fill`
// on every side (torchvision RandomCrop(size, padding), constant padding):
// RandomCrop{32, 4}, RandomCrop{{24, 32}, 2}.
struct RandomCrop {
  CropSize size;
  std::int64_t padding = 0;
  float fill = 0.0f;
  RandomCrop(CropSize size, std::int64_t padding = 0, float fill = 0.0f) : size(size), padding(padding), fill(fill) {}

  // The window whose top-left corner is (top, left) in the padded image.
  Example crop_at(const Example& x, std::int64_t top, std::int64_t left) const;
  // top uniform in [0, H + 2 padding - height], then left in [0, W + 2 padding - width].
  Example operator()(const Example& x, Rng& rng) const;
};

// Mirrors the last dimension (columns) of an image.
Example horizontal_flip(Example x);

// horizontal_flip with probability p (torchvision RandomHorizontalFlip: flips when a uniform
// draw is below p).
struct RandomHorizontalFlip {
  double p = 0.5;
  Example operator()(Example x, Rng& rng) const;
};

// Sets the dense target to the one-hot row of the label (torch.nn.functional.one_hot, as f32);
// the label stays, for accuracy.
struct OneHot {
  std::int64_t num_classes = 0;
  Example operator()(Example x) const;
};

}  // namespace kiln::data
