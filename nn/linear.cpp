#include "kiln/nn/linear.h"

#include <cmath>

#include "kiln/nn/functional.h"

namespace kiln::nn {

namespace {

// PyTorch's reset_parameters for Linear, Bilinear and convolutions: kaiming_uniform with
// a = sqrt(5) on the weight is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias takes the same bound.
Tensor fan_in_uniform(const Shape& shape, std::int64_t fan_in, Device device) {
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  return uniform(shape, -bound, bound, default_generator(), TensorOptions{DType::f32, device});
}

void check_positive(const char* layer, std::initializer_list<std::int64_t> sizes) {
  for (std::int64_t s : sizes)
    KILN_CHECK(s > 0, layer, "sizes must be positive, got " + std::to_string(s));
}

}  // namespace

Linear::Linear(std::int64_t in, std::int64_t out, const LinearOptions& options) {
  check_positive("Linear", {in, out});
  weight = Parameter(fan_in_uniform(Shape{out, in}, in, options.device));
  if (options.bias) bias = Parameter(fan_in_uniform(Shape{out}, in, options.device));
}

Tensor Linear::forward(Tensor x) const {
  KILN_CHECK(x.defined() && x.rank() >= 1 && x.shape()[x.rank() - 1] == in_features(), where(),
             "expected an input [..., " + std::to_string(in_features()) + "], got " +
                 (x.defined() ? x.shape().str() : std::string("an undefined tensor")));
  // x Wᵀ with W read transposed in place, or copied first where a device cannot (the executor's
  // decomposition): nothing here depends on the device.
  return guarded([&] { return linear(std::move(x), weight, bias); });
}

std::string Linear::describe() const {
  return "in_features=" + std::to_string(in_features()) + ", out_features=" + std::to_string(out_features()) +
         ", bias=" + (bias.defined() ? "true" : "false");
}

Bilinear::Bilinear(std::int64_t in1, std::int64_t in2, std::int64_t out, const LinearOptions& options) {
  check_positive("Bilinear", {in1, in2, out});
  weight = Parameter(fan_in_uniform(Shape{out, in1, in2}, in1, options.device));
  if (options.bias) bias = Parameter(fan_in_uniform(Shape{out}, in1, options.device));
}

Tensor Bilinear::forward(const Tensor& x1, const Tensor& x2) const {
  const Shape& w = weight.shape();
  KILN_CHECK(x1.defined() && x2.defined() && x1.rank() >= 1 && x2.rank() >= 1 && x1.shape()[x1.rank() - 1] == w[1] &&
                 x2.shape()[x2.rank() - 1] == w[2],
             where(),
             "expected inputs [..., " + std::to_string(w[1]) + "] and [..., " + std::to_string(w[2]) + "], got " +
                 (x1.defined() ? x1.shape().str() : "?") + " and " + (x2.defined() ? x2.shape().str() : "?"));
  return guarded([&] { return bilinear(x1, x2, weight, bias); });
}

std::string Bilinear::describe() const {
  const Shape& w = weight.shape();
  return "in1_features=" + std::to_string(w[1]) + ", in2_features=" + std::to_string(w[2]) +
         ", out_features=" + std::to_string(w[0]) + ", bias=" + (bias.defined() ? "true" : "false");
}

Embedding::Embedding(std::int64_t num, std::int64_t dim, const EmbeddingOptions& options) {
  std::optional<std::int64_t> padding_idx = options.padding_idx;
  const Device device = options.device;
  check_positive("Embedding", {num, dim});
  if (padding_idx) {
    KILN_CHECK(*padding_idx >= -num && *padding_idx < num, "Embedding",
               "padding_idx " + std::to_string(*padding_idx) + " is out of range for " + std::to_string(num) +
                   " embeddings");
    if (*padding_idx < 0) *padding_idx += num;
  }
  padding_idx_ = padding_idx;
  // torch: N(0, 1), the padding row zeroed.
  Tensor w = randn(Shape{num, dim}, default_generator(), TensorOptions{DType::f32, device});
  if (padding_idx) {
    std::vector<bool> row(static_cast<std::size_t>(num), false);
    row[static_cast<std::size_t>(*padding_idx)] = true;
    w = masked_fill(std::move(w), kiln::to(from_vector(row, Shape{num, 1}), device), 0.0);
  }
  weight = Parameter(w);
}

Tensor Embedding::forward(const Tensor& indices) const {
  KILN_CHECK(indices.defined() && indices.dtype() == DType::i64, where(),
             "expected i64 indices, got " +
                 (indices.defined() ? std::string(dtype_name(indices.dtype())) + indices.shape().str() : "?"));
  return guarded([&] { return embedding(indices, weight, padding_idx_); });
}

std::string Embedding::describe() const {
  return std::to_string(weight.shape()[0]) + ", " + std::to_string(weight.shape()[1]) +
         (padding_idx_ ? ", padding_idx=" + std::to_string(*padding_idx_) : "");
}

Tensor Flatten::forward(const Tensor& x) const {
  return guarded([&] { return flatten(x, start_, end_); });
}

std::string Flatten::describe() const {
  return "start_dim=" + std::to_string(start_) + ", end_dim=" + std::to_string(end_);
}

}  // namespace kiln::nn
