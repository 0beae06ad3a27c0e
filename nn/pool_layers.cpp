#include "kiln/nn/pool_layers.h"

namespace kiln::nn {

namespace {
std::string pool_describe(const PoolOptions& o) {
  std::string s = "kernel_size=" + Shape(o.kernel).str();
  if (!o.stride.empty()) s += ", stride=" + Shape(o.stride).str();
  s += ", padding=" + Shape(o.padding).str();
  if (o.ceil_mode) s += ", ceil_mode=true";
  return s;
}
}  // namespace

#define KILN_NN_POOL_LAYER_IMPL(Type, call, describe_expr)                     \
  Tensor Type::forward(const Tensor& x) const {                                \
    return guarded([&] { return call(x, settings_); });                        \
  }                                                                            \
  std::string Type::describe() const { return describe_expr; }
KILN_NN_POOL_LAYER_IMPL(MaxPool1d, max_pool1d, pool_describe(settings_))
KILN_NN_POOL_LAYER_IMPL(MaxPool2d, max_pool2d, pool_describe(settings_))
KILN_NN_POOL_LAYER_IMPL(AvgPool1d, avg_pool1d, pool_describe(settings_))
KILN_NN_POOL_LAYER_IMPL(AvgPool2d, avg_pool2d, pool_describe(settings_))
KILN_NN_POOL_LAYER_IMPL(AdaptiveAvgPool1d, adaptive_avg_pool1d, "output_size=" + Shape(settings_).str())
KILN_NN_POOL_LAYER_IMPL(AdaptiveAvgPool2d, adaptive_avg_pool2d, "output_size=" + Shape(settings_).str())
KILN_NN_POOL_LAYER_IMPL(AdaptiveMaxPool2d, adaptive_max_pool2d, "output_size=" + Shape(settings_).str())
#undef KILN_NN_POOL_LAYER_IMPL

Tensor Upsample::forward(const Tensor& x) const {
  return guarded([&] { return interpolate2d(x, size_, mode_, align_corners_); });
}

std::string Upsample::describe() const {
  return "size=" + Shape(size_).str() + ", mode=" + (mode_ == InterpolateMode::nearest ? "nearest" : "bilinear");
}

}  // namespace kiln::nn
