// Layer, group, instance, RMS and batch normalization: mean and (biased) variance over the
// normalized dims, then an optional per-element or per-channel scale and shift. Every
// normalization shares normalize() below; they differ only in which dims they reduce. Batch
// normalization in training mode is the exception: one op of its own (ops/norm.cpp), whose
// kernel makes the statistics and the normalization in one read of x.
#include <cfloat>
#include <string>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/norm.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/functional_detail.h"

namespace kiln::nn {
namespace {

// (x - mean) / sqrt(var + eps) over `dims`, with the biased variance, as torch normalizes.
Tensor normalize(Tensor x, const Dims& dims, double eps) {
  Tensor centered = sub(x, mean(x, dims, true));
  Tensor inv_std = rsqrt(add(var(std::move(x), dims, 0.0, true), eps));
  return mul(std::move(centered), std::move(inv_std));
}

// The last normalized_shape.rank() dims of x, after checking that they are normalized_shape and
// that weight and bias (when defined) have that shape.
Dims trailing_dims(const char* op, const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                   const Tensor& bias) {
  detail::check_float(op, "input", x);
  const int k = normalized_shape.rank(), r = x.rank();
  bool fits = k >= 1 && k <= r;
  for (int i = 0; fits && i < k; ++i) fits = x.shape()[r - k + i] == normalized_shape[i];
  KILN_CHECK(fits, op,
             "normalized_shape " + normalized_shape.str() + " must be the last dims of input " + x.shape().str());
  for (const auto& [what, t] : {std::pair<const char*, const Tensor&>{"weight", weight}, {"bias", bias}}) {
    if (!t.defined()) continue;
    detail::check_float(op, what, t);
    KILN_CHECK(
        t.shape() == normalized_shape, op,
        std::string(what) + " must have normalized_shape " + normalized_shape.str() + ", got " + t.shape().str());
  }
  Dims dims;
  for (int d = r - k; d < r; ++d) dims.push_back(d);
  return dims;
}

// Checks x [N, C, *] (at least min_rank dims) and per-channel weight and bias; returns C.
std::int64_t check_channels(const char* op, const Tensor& x, int min_rank, const Tensor& weight, const Tensor& bias) {
  detail::check_float(op, "input", x);
  KILN_CHECK(x.rank() >= min_rank, op,
             "input must be [N, C" + std::string(min_rank > 2 ? ", *spatial" : ", *") + "], got " + x.shape().str());
  const std::int64_t channels = x.size(1);
  detail::check_per_channel(op, "weight", weight, channels, x);
  detail::check_per_channel(op, "bias", bias, channels, x);
  return channels;
}

// y * weight + bias with [C] parameters broadcast along dim 1.
Tensor channel_affine(Tensor y, Tensor weight, Tensor bias) {
  const int r = y.rank();
  if (weight.defined()) y = mul(std::move(y), detail::channel_view(std::move(weight), r));
  if (bias.defined()) y = add(std::move(y), detail::channel_view(std::move(bias), r));
  return y;
}

}  // namespace

Tensor layer_norm(Tensor x, const Shape& normalized_shape, Tensor weight, Tensor bias, double eps) {
  const Dims dims = trailing_dims("layer_norm", x, normalized_shape, weight, bias);
  Tensor y = normalize(std::move(x), dims, eps);
  if (weight.defined()) y = mul(std::move(y), std::move(weight));
  if (bias.defined()) y = add(std::move(y), std::move(bias));
  return y;
}

Tensor rms_norm(Tensor x, const Shape& normalized_shape, Tensor weight, std::optional<double> eps) {
  const Dims dims = trailing_dims("rms_norm", x, normalized_shape, weight, Tensor{});
  Tensor inv_rms = rsqrt(add(mean(square(x), dims, true), eps.value_or(FLT_EPSILON)));
  Tensor y = mul(std::move(x), std::move(inv_rms));
  return weight.defined() ? mul(std::move(y), std::move(weight)) : y;
}

Tensor group_norm(Tensor x, std::int64_t groups, Tensor weight, Tensor bias, double eps) {
  const std::int64_t channels = check_channels("group_norm", x, 2, weight, bias);
  KILN_CHECK(groups > 0 && channels % groups == 0, "group_norm",
             "the " + std::to_string(channels) + " channels of input " + x.shape().str() +
                 " must divide into groups = " + std::to_string(groups));
  const Shape shape = x.shape();
  const std::int64_t n = shape[0], per_group = n * groups == 0 ? 0 : shape.numel() / (n * groups);
  Tensor y = normalize(reshape(std::move(x), {n, groups, per_group}), {2}, eps);
  return channel_affine(reshape(std::move(y), shape.to_vector()), std::move(weight), std::move(bias));
}

Tensor instance_norm(Tensor x, Tensor weight, Tensor bias, double eps) {
  check_channels("instance_norm", x, 3, weight, bias);
  Dims spatial;
  std::int64_t elements = 1;
  for (int d = 2; d < x.rank(); ++d) {
    spatial.push_back(d);
    elements *= x.size(d);
  }
  KILN_CHECK(elements > 1, "instance_norm",
             "expected more than 1 spatial element per channel, got input " + x.shape().str());
  Tensor y = normalize(std::move(x), spatial, eps);
  return channel_affine(std::move(y), std::move(weight), std::move(bias));
}

BatchNormResult batch_norm(Tensor x, Tensor running_mean, Tensor running_var, Tensor weight, Tensor bias, bool training,
                           double momentum, double eps) {
  const char* op = "batch_norm";
  const std::int64_t channels = check_channels(op, x, 2, weight, bias);
  KILN_CHECK(running_mean.defined() == running_var.defined(), op,
             "running_mean and running_var must both be defined or both undefined");
  KILN_CHECK(training || running_mean.defined(), op, "running_mean and running_var are needed when not training");
  if (running_mean.defined()) {
    detail::check_float(op, "running_mean", running_mean);
    detail::check_float(op, "running_var", running_var);
    detail::check_per_channel(op, "running_mean", running_mean, channels, x);
    detail::check_per_channel(op, "running_var", running_var, channels, x);
  }
  const int r = x.rank();
  if (!training) {
    Tensor centered = sub(std::move(x), detail::channel_view(running_mean, r));
    Tensor inv_std = rsqrt(add(detail::channel_view(running_var, r), eps));
    Tensor y = channel_affine(mul(std::move(centered), std::move(inv_std)), std::move(weight), std::move(bias));
    return {std::move(y), std::move(running_mean), std::move(running_var)};
  }

  const std::int64_t count = channels == 0 ? 0 : x.numel() / channels;
  KILN_CHECK(count > 1, op, "expected more than 1 value per channel when training, got input " + x.shape().str());
  // One batch_norm op (ops/norm.cpp): the statistics and the normalization in one kernel, and
  // one batch_norm_backward op for the gradient. It takes weight and bias of x's dtype.
  const TensorOptions like{x.dtype(), x.device()};
  auto as_x = [&](Tensor t) { return t.dtype() == like.dtype ? t : cast(std::move(t), like.dtype); };
  weight = weight.defined() ? as_x(std::move(weight)) : ones(Shape{channels}, like);
  bias = bias.defined() ? as_x(std::move(bias)) : zeros(Shape{channels}, like);
  BatchNormStatistics out = batch_norm_training(std::move(x), std::move(weight), std::move(bias), eps);
  Tensor y = std::move(out.output);
  if (!running_mean.defined()) return {std::move(y), Tensor{}, Tensor{}};

  // The running statistics are buffers, not part of the graph: torch updates them in place
  // under no_grad, with the unbiased variance.
  NoGradGuard no_grad;
  const double unbiased = static_cast<double>(count) / static_cast<double>(count - 1);
  Tensor new_mean = add(mul(std::move(running_mean), 1.0 - momentum), mul(detach(out.mean), momentum));
  Tensor new_var = add(mul(std::move(running_var), 1.0 - momentum), mul(detach(out.var), momentum * unbiased));
  return {std::move(y), std::move(new_mean), std::move(new_var)};
}

}  // namespace kiln::nn
