// Pooling and resizing layers: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d,
// AdaptiveMaxPool1d/2d and Upsample. They hold no parameters; forward is the op of the same
// name (engine/pool.h, engine/interpolate.h).
#pragma once
#include <type_traits>

#include "kiln/engine/interpolate.h"
#include "kiln/engine/pool.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

enum class PoolKind { max, avg, adaptive_avg, adaptive_max };

// A pooling layer over D spatial dims (1 or 2): its forward is engine/pool.h's op of its kind.
// One template over the kind and the dims; MaxPool2d and the others name its instances, and each
// instance reports its PyTorch name (summaries, errors).
template <PoolKind K, int D> class PoolNd : public Module {
  static_assert(D == 1 || D == 2, "pooling layers have 1 or 2 spatial dims");

 public:
  static constexpr bool adaptive = K == PoolKind::adaptive_avg || K == PoolKind::adaptive_max;
  // The window (PoolOptions), or the output size for the adaptive kinds.
  using Settings = std::conditional_t<adaptive, Window, PoolOptions>;

  explicit PoolNd(Settings settings) : settings_(std::move(settings)) {}
  Tensor forward(const Tensor& x) const;
  std::string describe() const override;
  KILN_MODULE(PoolNd)

 private:
  Settings settings_;
};

using MaxPool1d = PoolNd<PoolKind::max, 1>;
using MaxPool2d = PoolNd<PoolKind::max, 2>;
using AvgPool1d = PoolNd<PoolKind::avg, 1>;
using AvgPool2d = PoolNd<PoolKind::avg, 2>;
using AdaptiveAvgPool1d = PoolNd<PoolKind::adaptive_avg, 1>;
using AdaptiveAvgPool2d = PoolNd<PoolKind::adaptive_avg, 2>;
using AdaptiveMaxPool1d = PoolNd<PoolKind::adaptive_max, 1>;
using AdaptiveMaxPool2d = PoolNd<PoolKind::adaptive_max, 2>;

namespace detail {
template <PoolKind K, int D> struct ModuleTypeName<PoolNd<K, D>> {
  static constexpr const char* names[4][2] = {{"MaxPool1d", "MaxPool2d"},
                                              {"AvgPool1d", "AvgPool2d"},
                                              {"AdaptiveAvgPool1d", "AdaptiveAvgPool2d"},
                                              {"AdaptiveMaxPool1d", "AdaptiveMaxPool2d"}};
  static constexpr const char* value = names[static_cast<int>(K)][D - 1];
};
}  // namespace detail

// Compiled once, in nn/pool.cpp.
extern template class PoolNd<PoolKind::max, 1>;
extern template class PoolNd<PoolKind::max, 2>;
extern template class PoolNd<PoolKind::avg, 1>;
extern template class PoolNd<PoolKind::avg, 2>;
extern template class PoolNd<PoolKind::adaptive_avg, 1>;
extern template class PoolNd<PoolKind::adaptive_avg, 2>;
extern template class PoolNd<PoolKind::adaptive_max, 1>;
extern template class PoolNd<PoolKind::adaptive_max, 2>;

struct UpsampleOptions {
  InterpolateMode mode = InterpolateMode::nearest;
  bool align_corners = false;  // bilinear only, as in torch
};

// Resizes [N, C, H, W] to `size` (torch.nn.Upsample with size=...).
class Upsample : public Module {
 public:
  using Options = UpsampleOptions;
  explicit Upsample(Window size, const UpsampleOptions& options = {})
      : size_(std::move(size)), mode_(options.mode), align_corners_(options.align_corners) {}
  Tensor forward(const Tensor& x) const;
  std::string describe() const override;
  KILN_MODULE(Upsample)

 private:
  Window size_;
  InterpolateMode mode_;
  bool align_corners_;
};

}  // namespace kiln::nn
