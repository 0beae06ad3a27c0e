// Normalization layers, with PyTorch's parameter and buffer names: BatchNorm1d/2d (weight,
// bias, running_mean, running_var, num_batches_tracked), LayerNorm, GroupNorm, InstanceNorm1d/2d,
// RMSNorm. In training mode BatchNorm normalizes with the batch's statistics and moves its
// running statistics toward them (momentum); in eval mode it uses the running statistics.
#pragma once
#include <optional>

#include "kiln/nn/module.h"

namespace kiln::nn {

struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = true;
  Device device = Device::cpu();
};

struct LayerNormOptions {
  double eps = 1e-5;
  bool elementwise_affine = true;  // a weight (and a bias) over normalized_shape
  bool bias = true;                // the bias, when elementwise_affine
  Device device = Device::cpu();
};

struct GroupNormOptions {
  double eps = 1e-5;
  bool affine = true;  // a weight and a bias per channel
  Device device = Device::cpu();
};

// torch's defaults: no affine parameters, no running statistics (track_running_stats=False).
struct InstanceNormOptions {
  double eps = 1e-5;
  bool affine = false;
  Device device = Device::cpu();
};

struct RMSNormOptions {
  std::optional<double> eps{};     // default: F.rms_norm's (f32's machine epsilon)
  bool elementwise_affine = true;  // a weight over normalized_shape
  Device device = Device::cpu();
};

namespace detail {
// What BatchNorm1d and BatchNorm2d share; each says which input ranks it takes.
class BatchNormBase : public Module {
 public:
  std::string describe() const override;

  Parameter weight, bias;
  Buffer running_mean, running_var, num_batches_tracked;

 protected:
  BatchNormBase(const char* layer, std::int64_t num_features, const BatchNormOptions& options);
  Tensor run(const Tensor& x, int min_rank, int max_rank, const char* expected) const;

 private:
  BatchNormOptions options_;
};
}  // namespace detail

class BatchNorm1d : public detail::BatchNormBase {
 public:
  using Options = BatchNormOptions;
  explicit BatchNorm1d(std::int64_t num_features, const BatchNormOptions& options = {})
      : BatchNormBase("BatchNorm1d", num_features, options) {}
  Tensor forward(const Tensor& x) const { return run(x, 2, 3, "[N, C] or [N, C, L]"); }
  KILN_MODULE(BatchNorm1d, weight, bias, running_mean, running_var, num_batches_tracked)
};

class BatchNorm2d : public detail::BatchNormBase {
 public:
  using Options = BatchNormOptions;
  explicit BatchNorm2d(std::int64_t num_features, const BatchNormOptions& options = {})
      : BatchNormBase("BatchNorm2d", num_features, options) {}
  Tensor forward(const Tensor& x) const { return run(x, 4, 4, "[N, C, H, W]"); }
  KILN_MODULE(BatchNorm2d, weight, bias, running_mean, running_var, num_batches_tracked)
};

// Normalizes over the trailing dims `normalized_shape`.
class LayerNorm : public Module {
 public:
  using Options = LayerNormOptions;
  explicit LayerNorm(std::vector<std::int64_t> normalized_shape, const LayerNormOptions& options = {});
  Tensor forward(const Tensor& x) const;
  std::string describe() const override;

  Parameter weight, bias;
  KILN_MODULE(LayerNorm, weight, bias)

 private:
  std::vector<std::int64_t> shape_;
  double eps_;
};

class GroupNorm : public Module {
 public:
  using Options = GroupNormOptions;
  GroupNorm(std::int64_t num_groups, std::int64_t num_channels, const GroupNormOptions& options = {});
  Tensor forward(const Tensor& x) const;  // [N, C, *]
  std::string describe() const override;

  Parameter weight, bias;
  KILN_MODULE(GroupNorm, weight, bias)

 private:
  std::int64_t groups_, channels_;
  double eps_;
};

namespace detail {
// What InstanceNorm1d and InstanceNorm2d share.
class InstanceNormBase : public Module {
 public:
  std::string describe() const override;

  Parameter weight, bias;

 protected:
  InstanceNormBase(std::int64_t num_features, const InstanceNormOptions& options);
  Tensor run(const Tensor& x, int rank, const char* expected) const;

 private:
  std::int64_t channels_;
  double eps_;
};
}  // namespace detail

// Each sample and channel normalized over its own spatial values (no running statistics).
class InstanceNorm1d : public detail::InstanceNormBase {
 public:
  using Options = InstanceNormOptions;
  explicit InstanceNorm1d(std::int64_t num_features, const InstanceNormOptions& options = {})
      : InstanceNormBase(num_features, options) {}
  Tensor forward(const Tensor& x) const { return run(x, 3, "[N, C, L]"); }
  KILN_MODULE(InstanceNorm1d, weight, bias)
};

class InstanceNorm2d : public detail::InstanceNormBase {
 public:
  using Options = InstanceNormOptions;
  explicit InstanceNorm2d(std::int64_t num_features, const InstanceNormOptions& options = {})
      : InstanceNormBase(num_features, options) {}
  Tensor forward(const Tensor& x) const { return run(x, 4, "[N, C, H, W]"); }
  KILN_MODULE(InstanceNorm2d, weight, bias)
};

// x / sqrt(mean(x², trailing dims) + eps) * weight.
class RMSNorm : public Module {
 public:
  using Options = RMSNormOptions;
  explicit RMSNorm(std::vector<std::int64_t> normalized_shape, const RMSNormOptions& options = {});
  Tensor forward(const Tensor& x) const;
  std::string describe() const override;

  Parameter weight;
  KILN_MODULE(RMSNorm, weight)

 private:
  std::vector<std::int64_t> shape_;
  std::optional<double> eps_;
};

}  // namespace kiln::nn
