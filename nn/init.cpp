// Initializers: torch.nn.init's bounds and standard deviations over kiln's random creation ops;
// orthogonal() does its QR on the host, once, when a layer is built.
#include "kiln/nn/init.h"

#include <cmath>
#include <string>
#include <vector>

namespace kiln::nn {
namespace {

void check_float_options(const char* op, const TensorOptions& options) {
  KILN_CHECK(is_floating(options.dtype), op,
             std::string("initializers make floating-point tensors, got dtype ") + dtype_name(options.dtype));
}

// fan_in_and_fan_out, with errors naming the initializer `op`.
std::pair<std::int64_t, std::int64_t> fans(const char* op, const Shape& shape) {
  KILN_CHECK(shape.rank() >= 2, op, "fan in and fan out need a shape of at least 2 dims, got " + shape.str());
  std::int64_t receptive = 1;
  for (int d = 2; d < shape.rank(); ++d) receptive *= shape[d];
  return {shape[1] * receptive, shape[0] * receptive};
}

double kaiming_std(const char* op, const Shape& shape, double a, FanMode mode, Nonlinearity nonlinearity) {
  const auto [fan_in, fan_out] = fans(op, shape);
  const double fan = static_cast<double>(mode == FanMode::fan_in ? fan_in : fan_out);
  return calculate_gain(nonlinearity, a) / std::sqrt(fan);
}

// The Q of A = QR with R's diagonal positive, for A [m, n] with m >= n given as its n columns;
// returns Q's columns. Each column is orthogonalized against the previous ones twice
// ("twice is enough"), which keeps Q orthogonal to rounding even when A is badly conditioned.
std::vector<std::vector<double>> orthonormal_columns(std::vector<std::vector<double>> columns) {
  for (std::size_t j = 0; j < columns.size(); ++j) {
    std::vector<double>& v = columns[j];
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t i = 0; i < j; ++i) {
        const std::vector<double>& q = columns[i];
        double r = 0.0;
        for (std::size_t k = 0; k < v.size(); ++k) r += q[k] * v[k];
        for (std::size_t k = 0; k < v.size(); ++k) v[k] -= r * q[k];
      }
    double norm = 0.0;
    for (double x : v) norm += x * x;
    norm = std::sqrt(norm);  // R's diagonal entry: positive, so no sign correction is needed
    for (double& x : v) x /= norm;
  }
  return columns;
}

Tensor on_device(std::vector<float> values, const Shape& shape, const TensorOptions& options) {
  Tensor t = from_vector(std::move(values), shape, options.device);
  return options.dtype == DType::f32 ? t : cast(std::move(t), options.dtype);
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case Nonlinearity::linear:
    case Nonlinearity::conv1d:
    case Nonlinearity::conv2d:
    case Nonlinearity::conv3d:
    case Nonlinearity::conv_transpose1d:
    case Nonlinearity::conv_transpose2d:
    case Nonlinearity::conv_transpose3d:
    case Nonlinearity::sigmoid: return 1.0;
    case Nonlinearity::tanh: return 5.0 / 3.0;
    case Nonlinearity::relu: return std::sqrt(2.0);
    case Nonlinearity::leaky_relu: return std::sqrt(2.0 / (1.0 + param * param));
    case Nonlinearity::selu: return 3.0 / 4.0;
  }
  return 1.0;
}

std::pair<std::int64_t, std::int64_t> fan_in_and_fan_out(const Shape& shape) {
  return fans("fan_in_and_fan_out", shape);
}

Tensor kaiming_uniform(const Shape& shape, double a, FanMode mode, Nonlinearity nonlinearity, Generator& gen,
                       TensorOptions options) {
  check_float_options("kaiming_uniform", options);
  if (shape.numel() == 0) return zeros(shape, options);  // torch: a no-op on zero elements
  const double bound = std::sqrt(3.0) * kaiming_std("kaiming_uniform", shape, a, mode, nonlinearity);
  return uniform(shape, -bound, bound, gen, options);
}

Tensor kaiming_normal(const Shape& shape, double a, FanMode mode, Nonlinearity nonlinearity, Generator& gen,
                      TensorOptions options) {
  check_float_options("kaiming_normal", options);
  if (shape.numel() == 0) return zeros(shape, options);
  return normal(shape, 0.0, kaiming_std("kaiming_normal", shape, a, mode, nonlinearity), gen, options);
}

Tensor xavier_uniform(const Shape& shape, double gain, Generator& gen, TensorOptions options) {
  check_float_options("xavier_uniform", options);
  const auto [fan_in, fan_out] = fans("xavier_uniform", shape);
  if (shape.numel() == 0) return zeros(shape, options);
  const double bound = std::sqrt(3.0) * gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return uniform(shape, -bound, bound, gen, options);
}

Tensor xavier_normal(const Shape& shape, double gain, Generator& gen, TensorOptions options) {
  check_float_options("xavier_normal", options);
  const auto [fan_in, fan_out] = fans("xavier_normal", shape);
  if (shape.numel() == 0) return zeros(shape, options);
  return normal(shape, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), gen, options);
}

Tensor uniform_init(const Shape& shape, double low, double high, Generator& gen, TensorOptions options) {
  check_float_options("uniform_init", options);
  KILN_CHECK(low <= high, "uniform_init",
             "low must not exceed high, got [" + std::to_string(low) + ", " + std::to_string(high) + "]");
  return uniform(shape, low, high, gen, options);
}

Tensor normal_init(const Shape& shape, double mean, double stddev, Generator& gen, TensorOptions options) {
  check_float_options("normal_init", options);
  KILN_CHECK(stddev >= 0.0, "normal_init", "std must not be negative, got " + std::to_string(stddev));
  return normal(shape, mean, stddev, gen, options);
}

Tensor constant(const Shape& shape, double value, TensorOptions options) { return full(shape, value, options); }

Tensor orthogonal(const Shape& shape, double gain, Generator& gen, TensorOptions options) {
  check_float_options("orthogonal", options);
  KILN_CHECK(shape.rank() >= 2, "orthogonal", "only shapes of at least 2 dims are supported, got " + shape.str());
  if (shape.numel() == 0) return zeros(shape, options);
  const std::int64_t rows = shape[0], cols = shape.numel() / rows;
  const std::vector<float> drawn = normal(Shape{rows, cols}, 0.0, 1.0, gen).to_vector<float>().get();
  // Factor the tall one of the draw and its transpose: A [m, n], m >= n, as n columns.
  const bool wide = rows < cols;
  const std::int64_t m = wide ? cols : rows, n = wide ? rows : cols;
  std::vector<std::vector<double>> columns(static_cast<std::size_t>(n),
                                           std::vector<double>(static_cast<std::size_t>(m)));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const double v = drawn[static_cast<std::size_t>(r * cols + c)];
      if (wide)
        columns[r][c] = v;  // A = draw^T: column r is row r of the draw
      else
        columns[c][r] = v;
    }
  const std::vector<std::vector<double>> q = orthonormal_columns(std::move(columns));
  // W = Q [rows, cols] (tall), or Q^T (wide), whose row r is Q's column r.
  std::vector<float> values(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      values[static_cast<std::size_t>(r * cols + c)] = static_cast<float>(gain * (wide ? q[r][c] : q[c][r]));
  return on_device(std::move(values), shape, options);
}

}  // namespace kiln::nn
