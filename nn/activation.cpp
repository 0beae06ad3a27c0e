#include "kiln/nn/activation.h"

#include "kiln/engine/recorded_function.h"
#include "kiln/nn/functional.h"

namespace kiln::nn {

Tensor ReLU::forward(Tensor x) const { return relu(std::move(x)); }
Tensor SiLU::forward(Tensor x) const { return silu(std::move(x)); }
Tensor Mish::forward(Tensor x) const { return mish(std::move(x)); }
Tensor Tanh::forward(Tensor x) const { return tanh(std::move(x)); }
Tensor Sigmoid::forward(Tensor x) const { return sigmoid(std::move(x)); }
Tensor GELU::forward(Tensor x) const { return gelu(std::move(x), tanh_); }
Tensor LeakyReLU::forward(const Tensor& x) const { return leaky_relu(x, slope_); }
Tensor ELU::forward(const Tensor& x) const { return elu(x, alpha_); }
Tensor Softmax::forward(const Tensor& x) const {
  return guarded([&] { return softmax(x, dim_); });
}
Tensor LogSoftmax::forward(const Tensor& x) const {
  return guarded([&] { return log_softmax(x, dim_); });
}

PReLU::PReLU(std::int64_t n, const PReLUOptions& o) {
  KILN_CHECK(n > 0, "PReLU", "num_parameters must be positive, got " + std::to_string(n));
  weight = Parameter(full(Shape{n}, o.init, TensorOptions{DType::f32, o.device}));
}

Tensor PReLU::forward(const Tensor& x) const {
  const std::int64_t n = weight.shape()[0];
  KILN_CHECK(n == 1 || (x.rank() >= 2 && x.shape()[1] == n), where(),
             "expected an input with " + std::to_string(n) + " channels in dim 1, got " + x.shape().str());
  return guarded([&] { return prelu(x, weight); });
}

Dropout::Dropout(const DropoutOptions& o) : p_(o.p), seed_(o.seed ? *o.seed : default_generator().next_draw()) {
  KILN_CHECK(p_ >= 0.0 && p_ <= 1.0, "Dropout", "p must be in [0, 1], got " + std::to_string(p_));
}

Tensor Dropout::forward(const Tensor& x) const {
  if (!is_training() || p_ == 0.0) return x;
  // One generator per call, from the seed and the call's number (SplitMix64's odd constant
  // keeps the streams of consecutive calls apart).
  const auto generator = [seed = seed_, calls = calls_] {
    const std::uint64_t call = calls->fetch_add(1, std::memory_order_relaxed);
    return Generator(seed ^ ((call + 1) * 0x9E3779B97F4A7C15ULL));
  };
  // In a recorded training step, each replay draws its own call's mask, as this call does.
  const RedrawnSeeds redrawn(generator);
  Generator gen = generator();
  return guarded([&] { return dropout(x, p_, true, gen); });
}

}  // namespace kiln::nn
