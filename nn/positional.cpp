#include "kiln/nn/positional.h"

#include <cmath>

namespace kiln::nn {

namespace {

// Checks x [..., seq, d] against a table of `rows` positions and returns seq.
std::int64_t check_positions(const Module& m, const Tensor& x, std::int64_t d, std::int64_t offset,
                             std::int64_t rows) {
  KILN_CHECK(x.defined() && x.rank() >= 2 && x.size(-1) == d, m.where(),
             "expected an input [..., seq, " + std::to_string(d) + "], got " +
                 (x.defined() ? x.shape().str() : std::string("an undefined tensor")));
  const std::int64_t seq = x.size(-2);
  KILN_CHECK(offset >= 0 && offset + seq <= rows, m.where(),
             "positions " + std::to_string(offset) + " .. " + std::to_string(offset + seq) + " of input " +
                 x.shape().str() + " are beyond max_len " + std::to_string(rows));
  return seq;
}

}  // namespace

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(std::int64_t d_model, std::int64_t max_len,
                                                           const PositionalEncodingOptions& o) {
  KILN_CHECK(d_model > 0 && max_len > 0, "SinusoidalPositionalEncoding",
             "d_model and max_len must be positive, got " + std::to_string(d_model) + " and " +
                 std::to_string(max_len));
  std::vector<float> table(static_cast<std::size_t>(max_len * d_model));
  for (std::int64_t i = 0; i < d_model; i += 2) {
    const double freq = std::exp(static_cast<double>(i) * (-std::log(10000.0) / static_cast<double>(d_model)));
    for (std::int64_t pos = 0; pos < max_len; ++pos) {
      const double angle = static_cast<double>(pos) * freq;
      float* row = table.data() + pos * d_model;
      row[i] = static_cast<float>(std::sin(angle));
      if (i + 1 < d_model) row[i + 1] = static_cast<float>(std::cos(angle));
    }
  }
  pe = Buffer(from_vector(std::move(table), Shape{max_len, d_model}, o.device));
}

Tensor SinusoidalPositionalEncoding::forward(const Tensor& x, std::int64_t offset) const {
  const Tensor table = pe.get();
  const std::int64_t seq = check_positions(*this, x, table.size(1), offset, table.size(0));
  return guarded([&] { return add(x, narrow(table, 0, offset, seq)); });
}

std::string SinusoidalPositionalEncoding::describe() const {
  const Shape& s = pe.get().shape();
  return "d_model=" + std::to_string(s[1]) + ", max_len=" + std::to_string(s[0]);
}

LearnedPositionalEncoding::LearnedPositionalEncoding(std::int64_t max_len, std::int64_t d_model,
                                                     const PositionalEncodingOptions& o) {
  KILN_CHECK(d_model > 0 && max_len > 0, "LearnedPositionalEncoding",
             "max_len and d_model must be positive, got " + std::to_string(max_len) + " and " +
                 std::to_string(d_model));
  weight = Parameter(randn(Shape{max_len, d_model}, default_generator(), TensorOptions{DType::f32, o.device}));
}

Tensor LearnedPositionalEncoding::forward(const Tensor& x, std::int64_t offset) const {
  const std::int64_t seq = check_positions(*this, x, weight.shape()[1], offset, weight.shape()[0]);
  // narrow's backward puts the gradient in rows offset .. offset + seq, as an embedding lookup does.
  return guarded([&] { return add(x, narrow(weight, 0, offset, seq)); });
}

std::string LearnedPositionalEncoding::describe() const {
  return "max_len=" + std::to_string(weight.shape()[0]) + ", d_model=" + std::to_string(weight.shape()[1]);
}

RotaryEmbedding::RotaryEmbedding(std::int64_t head_dim, const RotaryEmbeddingOptions& o)
    : head_dim_(head_dim), base_(o.base) {
  const double base = o.base;
  KILN_CHECK(head_dim > 0 && head_dim % 2 == 0, "RotaryEmbedding",
             "head_dim must be positive and even, got " + std::to_string(head_dim));
  KILN_CHECK(base > 0.0, "RotaryEmbedding", "base must be positive, got " + std::to_string(base));
  for (std::int64_t k = 0; k < head_dim / 2; ++k)
    inv_freq_.push_back(static_cast<float>(std::pow(base, -2.0 * static_cast<double>(k) / static_cast<double>(head_dim))));
}

Tensor RotaryEmbedding::forward(const Tensor& x, std::int64_t offset) const {
  KILN_CHECK(x.defined() && x.rank() >= 2 && x.size(-1) == head_dim_, where(),
             "expected an input [..., seq, " + std::to_string(head_dim_) + "], got " +
                 (x.defined() ? x.shape().str() : std::string("an undefined tensor")));
  KILN_CHECK(offset >= 0, where(), "offset must be non-negative, got " + std::to_string(offset));
  return guarded([&] {
    const std::int64_t seq = x.size(-2), half = head_dim_ / 2;
    const Device device = x.device();
    // angle[pos, k] = pos * inv_freq[k], an f32 product as torch's reference computes it.
    const Tensor positions = reshape(
        arange(static_cast<double>(offset), static_cast<double>(offset + seq), 1.0, TensorOptions{DType::f32, device}),
        {seq, 1});
    const Tensor angles = mul(positions, from_vector(inv_freq_, Shape{1, half}, device));
    Tensor c = cos(angles), s = sin(angles);
    if (x.dtype() != DType::f32) c = cast(std::move(c), x.dtype()), s = cast(std::move(s), x.dtype());
    const Tensor x1 = narrow(x, -1, 0, half), x2 = narrow(x, -1, half, half);
    return cat({sub(mul(x1, c), mul(x2, s)), add(mul(x2, c), mul(x1, s))}, -1);
  });
}

std::string RotaryEmbedding::describe() const {
  return "head_dim=" + std::to_string(head_dim_) + ", base=" + std::to_string(base_);
}

}  // namespace kiln::nn
