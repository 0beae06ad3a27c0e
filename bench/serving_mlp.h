// The serving workloads' MLP (784-512-512-10, ReLU; shared/WORKLOADS.md) as kiln code, for the
// serving benchmarks (serve_bench.cpp) and the interleaved probe (probes/ort_interleaved.cpp).
#pragma once
#include <vector>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/kiln.h"
#include "kiln/nn/nn.h"

namespace kiln::bench {

// The MLP written with raw ops.
struct RawMlp {
  Tensor w1, b1, w2, b2, w3, b3;
  explicit RawMlp(Device d) {
    Generator gen(5);
    auto uniform = [&](Shape s, double bound) { return to(sub(mul(rand(s, gen), 2 * bound), bound), d); };
    w1 = uniform({784, 512}, 1 / 28.0);
    b1 = uniform({512}, 1 / 28.0);
    w2 = uniform({512, 512}, 1 / 22.6);
    b2 = uniform({512}, 1 / 22.6);
    w3 = uniform({512, 10}, 1 / 22.6);
    b3 = uniform({10}, 1 / 22.6);
    sync(d).get();
  }
  Tensor operator()(const Tensor& x) const {
    return add(matmul(relu(add(matmul(relu(add(matmul(x, w1), b1)), w2), b2)), w3), b3);
  }
};

inline nn::Sequential module_mlp(Device d) {
  manual_seed(5);
  return nn::Sequential(nn::Linear(784, 512, {.device = d}), nn::ReLU(), nn::Linear(512, 512, {.device = d}),
                        nn::ReLU(), nn::Linear(512, 10, {.device = d}));
}

inline std::vector<float> request_input(int k) {
  std::vector<float> x(784);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 31 + k) % 255) / 255.0f;
  return x;
}

// A model's forward pass recorded once: each request is its input, one replay and a read.
template <class Model>
RecordedPass recorded(const Model& model, Device d) {
  const NoGradGuard no_grad;
  return RecordedPass::record([&](const Tensor& x) { return model(x); }, {1, 784}, DType::f32, d);
}

}  // namespace kiln::bench
