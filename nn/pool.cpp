#include "kiln/nn/pool.h"

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

template <PoolKind K, int D> Tensor PoolNd<K, D>::forward(const Tensor& x) const {
  return guarded([&] {
    if constexpr (K == PoolKind::max) return D == 1 ? max_pool1d(x, settings_) : max_pool2d(x, settings_);
    else if constexpr (K == PoolKind::avg) return D == 1 ? avg_pool1d(x, settings_) : avg_pool2d(x, settings_);
    else if constexpr (K == PoolKind::adaptive_avg)
      return D == 1 ? adaptive_avg_pool1d(x, settings_) : adaptive_avg_pool2d(x, settings_);
    else return D == 1 ? adaptive_max_pool1d(x, settings_) : adaptive_max_pool2d(x, settings_);
  });
}

template <PoolKind K, int D> std::string PoolNd<K, D>::describe() const {
  if constexpr (adaptive) return "output_size=" + Shape(settings_).str();
  else return pool_describe(settings_);
}

template class PoolNd<PoolKind::max, 1>;
template class PoolNd<PoolKind::max, 2>;
template class PoolNd<PoolKind::avg, 1>;
template class PoolNd<PoolKind::avg, 2>;
template class PoolNd<PoolKind::adaptive_avg, 1>;
template class PoolNd<PoolKind::adaptive_avg, 2>;
template class PoolNd<PoolKind::adaptive_max, 1>;
template class PoolNd<PoolKind::adaptive_max, 2>;

Tensor Upsample::forward(const Tensor& x) const {
  return guarded([&] { return interpolate2d(x, size_, mode_, align_corners_); });
}

std::string Upsample::describe() const {
  return "size=" + Shape(size_).str() + ", mode=" + (mode_ == InterpolateMode::nearest ? "nearest" : "bilinear");
}

}  // namespace kiln::nn
