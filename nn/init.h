// kiln::nn initializers: new tensors drawn as torch.nn.init fills them (same distributions,
// bounds and gains; not torch's random stream). They return values rather than filling a
// tensor in place: a layer builds its parameters from them.
//
// Shapes follow torch's layout: [out, in, *kernel] for weights, where fan_in = in * kernel
// elements and fan_out = out * kernel elements.
#pragma once
#include <cstdint>
#include <utility>

#include "kiln/engine/kiln.h"

namespace kiln::nn {

enum class Nonlinearity {
  linear,
  conv1d,
  conv2d,
  conv3d,
  conv_transpose1d,
  conv_transpose2d,
  conv_transpose3d,
  sigmoid,
  tanh,
  relu,
  leaky_relu,
  selu
};
enum class FanMode { fan_in, fan_out };

// torch.nn.init.calculate_gain: 1 for linear, the convolutions and sigmoid; 5/3 for tanh;
// sqrt(2) for relu; sqrt(2 / (1 + param^2)) for leaky_relu (param is its negative slope,
// torch's default 0.01); 3/4 for selu. param is used only by leaky_relu.
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
// (fan_in, fan_out) of a weight of `shape` (at least 2 dims, else kiln::Error).
std::pair<std::int64_t, std::int64_t> fan_in_and_fan_out(const Shape& shape);

// He initialization: std = gain / sqrt(fan) with gain = calculate_gain(nonlinearity, a);
// uniform in [-sqrt(3) std, sqrt(3) std], or normal(0, std).
Tensor kaiming_uniform(const Shape& shape, double a = 0.0, FanMode mode = FanMode::fan_in,
                       Nonlinearity nonlinearity = Nonlinearity::leaky_relu, Generator& gen = default_generator(),
                       TensorOptions options = {});
Tensor kaiming_normal(const Shape& shape, double a = 0.0, FanMode mode = FanMode::fan_in,
                      Nonlinearity nonlinearity = Nonlinearity::leaky_relu, Generator& gen = default_generator(),
                      TensorOptions options = {});
// Glorot initialization: std = gain sqrt(2 / (fan_in + fan_out)); uniform in
// [-sqrt(3) std, sqrt(3) std], or normal(0, std).
Tensor xavier_uniform(const Shape& shape, double gain = 1.0, Generator& gen = default_generator(),
                      TensorOptions options = {});
Tensor xavier_normal(const Shape& shape, double gain = 1.0, Generator& gen = default_generator(),
                     TensorOptions options = {});
// torch.nn.init.uniform_ / normal_ / constant_ as values.
Tensor uniform_init(const Shape& shape, double low = 0.0, double high = 1.0, Generator& gen = default_generator(),
                    TensorOptions options = {});
Tensor normal_init(const Shape& shape, double mean = 0.0, double stddev = 1.0, Generator& gen = default_generator(),
                   TensorOptions options = {});
Tensor constant(const Shape& shape, double value, TensorOptions options = {});
// A (semi-)orthogonal matrix times gain, viewed as `shape` (at least 2 dims; rows = shape[0],
// cols = the rest). As torch: the QR decomposition of a [rows, cols] standard normal draw from
// gen (of its transpose when rows < cols), its Q taken with R's diagonal made positive, so
// W W^T = gain^2 I for wide shapes and W^T W = gain^2 I for tall ones. Computed on the host in
// double precision (Gram-Schmidt, orthogonalized twice), then uploaded to options.device.
Tensor orthogonal(const Shape& shape, double gain = 1.0, Generator& gen = default_generator(),
                  TensorOptions options = {});

}  // namespace kiln::nn
