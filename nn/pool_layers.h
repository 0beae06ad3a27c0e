// Pooling and resizing layers: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d,
// AdaptiveMaxPool2d and Upsample. They hold no parameters; forward is engine/conv.h's op of
// the same name (engine/pool.h, engine/interpolate.h).
#pragma once
#include "kiln/engine/interpolate.h"
#include "kiln/engine/pool.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

// A pooling layer whose forward is `fn(x, settings)`.
#define KILN_NN_POOL_LAYER(Type, Settings)                 \
  class Type : public Module {                             \
   public:                                                 \
    explicit Type(Settings settings) : settings_(std::move(settings)) {} \
    Tensor forward(const Tensor& x) const;                 \
    std::string describe() const override;                 \
    KILN_MODULE(Type)                                      \
                                                           \
   private:                                                \
    Settings settings_;                                    \
  };
KILN_NN_POOL_LAYER(MaxPool1d, PoolOptions)
KILN_NN_POOL_LAYER(MaxPool2d, PoolOptions)
KILN_NN_POOL_LAYER(AvgPool1d, PoolOptions)
KILN_NN_POOL_LAYER(AvgPool2d, PoolOptions)
KILN_NN_POOL_LAYER(AdaptiveAvgPool1d, Window)
KILN_NN_POOL_LAYER(AdaptiveAvgPool2d, Window)
KILN_NN_POOL_LAYER(AdaptiveMaxPool2d, Window)
#undef KILN_NN_POOL_LAYER

// Resizes [N, C, H, W] to `size` (torch.nn.Upsample with size=...).
class Upsample : public Module {
 public:
  explicit Upsample(Window size, InterpolateMode mode = InterpolateMode::nearest, bool align_corners = false)
      : size_(std::move(size)), mode_(mode), align_corners_(align_corners) {}
  Tensor forward(const Tensor& x) const;
  std::string describe() const override;
  KILN_MODULE(Upsample)

 private:
  Window size_;
  InterpolateMode mode_;
  bool align_corners_;
};

}  // namespace kiln::nn
