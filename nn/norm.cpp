#include "kiln/nn/norm.h"

#include "kiln/nn/functional.h"

namespace kiln::nn {

namespace {

std::string shape_str(const std::vector<std::int64_t>& s) { return Shape(s).str(); }

TensorOptions on(Device device) { return TensorOptions{DType::f32, device}; }

void check_channels(const Module& m, const Tensor& x, std::int64_t c, int min_rank, int max_rank,
                    const char* expected) {
  KILN_CHECK(x.defined() && x.rank() >= min_rank && x.rank() <= max_rank && x.shape()[1] == c, m.where(),
             std::string("expected an input ") + expected + " with C = " + std::to_string(c) + ", got " +
                 (x.defined() ? x.shape().str() : std::string("an undefined tensor")));
}

}  // namespace

namespace detail {

BatchNormBase::BatchNormBase(const char* layer, std::int64_t c, const BatchNormOptions& o) : options_(o) {
  KILN_CHECK(c > 0, layer, "num_features must be positive, got " + std::to_string(c));
  if (o.affine) {
    weight = Parameter(ones(Shape{c}, on(o.device)));
    bias = Parameter(zeros(Shape{c}, on(o.device)));
  }
  running_mean = Buffer(zeros(Shape{c}, on(o.device)));
  running_var = Buffer(ones(Shape{c}, on(o.device)));
  num_batches_tracked = Buffer(zeros(Shape{}, TensorOptions{DType::i64, o.device}));
}

// In training mode the running statistics move (shared cells: every copy of the module sees
// them, as every user of a torch module does).
Tensor BatchNormBase::run(const Tensor& x, int min_rank, int max_rank, const char* expected) const {
  check_channels(*this, x, running_mean.get().shape()[0], min_rank, max_rank, expected);
  const bool training = is_training();
  BatchNormResult r = guarded([&] {
    return batch_norm(x, running_mean.get(), running_var.get(), weight, bias, training, options_.momentum,
                      options_.eps);
  });
  if (training) {
    running_mean.update(r.running_mean);
    running_var.update(r.running_var);
    // i64 + an i64 one: a Python-style double scalar would lift the count to f32.
    const Tensor count = num_batches_tracked.get();
    num_batches_tracked.update(add(count, scalar(1, TensorOptions{DType::i64, count.device()})));
  }
  return std::move(r.output);
}

std::string BatchNormBase::describe() const {
  return std::to_string(running_mean.get().shape()[0]) + ", eps=" + format_setting(options_.eps) +
         ", momentum=" + format_setting(options_.momentum) + ", affine=" + (weight.defined() ? "true" : "false");
}

InstanceNormBase::InstanceNormBase(std::int64_t c, const InstanceNormOptions& o) : channels_(c), eps_(o.eps) {
  KILN_CHECK(c > 0, "InstanceNorm", "num_features must be positive, got " + std::to_string(c));
  if (o.affine) {
    weight = Parameter(ones(Shape{c}, on(o.device)));
    bias = Parameter(zeros(Shape{c}, on(o.device)));
  }
}

Tensor InstanceNormBase::run(const Tensor& x, int rank, const char* expected) const {
  check_channels(*this, x, channels_, rank, rank, expected);
  return guarded([&] { return instance_norm(x, weight, bias, eps_); });
}

std::string InstanceNormBase::describe() const {
  return std::to_string(channels_) + ", eps=" + format_setting(eps_);
}

}  // namespace detail

LayerNorm::LayerNorm(std::vector<std::int64_t> shape, const LayerNormOptions& o)
    : shape_(std::move(shape)), eps_(o.eps) {
  KILN_CHECK(!shape_.empty(), "LayerNorm", "normalized_shape must have at least one dim");
  if (o.elementwise_affine) {
    weight = Parameter(ones(Shape(shape_), on(o.device)));
    if (o.bias) bias = Parameter(zeros(Shape(shape_), on(o.device)));
  }
}

Tensor LayerNorm::forward(const Tensor& x) const {
  return guarded([&] { return layer_norm(x, Shape(shape_), weight, bias, eps_); });
}

std::string LayerNorm::describe() const {
  return shape_str(shape_) + ", eps=" + format_setting(eps_) + ", elementwise_affine=" +
         (weight.defined() ? "true" : "false");
}

GroupNorm::GroupNorm(std::int64_t groups, std::int64_t channels, const GroupNormOptions& o)
    : groups_(groups), channels_(channels), eps_(o.eps) {
  KILN_CHECK(groups > 0 && channels > 0 && channels % groups == 0, "GroupNorm",
             "num_channels (" + std::to_string(channels) + ") must be divisible by num_groups (" +
                 std::to_string(groups) + ")");
  if (o.affine) {
    weight = Parameter(ones(Shape{channels}, on(o.device)));
    bias = Parameter(zeros(Shape{channels}, on(o.device)));
  }
}

Tensor GroupNorm::forward(const Tensor& x) const {
  check_channels(*this, x, channels_, 2, 8, "[N, C, *]");
  return guarded([&] { return group_norm(x, groups_, weight, bias, eps_); });
}

std::string GroupNorm::describe() const {
  return std::to_string(groups_) + ", " + std::to_string(channels_) + ", eps=" + format_setting(eps_);
}

RMSNorm::RMSNorm(std::vector<std::int64_t> shape, const RMSNormOptions& o) : shape_(std::move(shape)), eps_(o.eps) {
  KILN_CHECK(!shape_.empty(), "RMSNorm", "normalized_shape must have at least one dim");
  if (o.elementwise_affine) weight = Parameter(ones(Shape(shape_), on(o.device)));
}

Tensor RMSNorm::forward(const Tensor& x) const {
  return guarded([&] { return rms_norm(x, Shape(shape_), weight, eps_); });
}

std::string RMSNorm::describe() const {
  return shape_str(shape_) + (eps_ ? ", eps=" + format_setting(*eps_) : std::string());
}

}  // namespace kiln::nn
