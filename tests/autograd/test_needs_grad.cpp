// A backward rule computes no gradient for an input that takes none (autograd's
// ForwardRecord::needs_grad): the first layer of a model, whose input is data, gets dW but no
// dX product. The gradients that are computed are the same as when every input takes one (the
// rules' own tests check those against PyTorch); the skipped products show in the kernel count.
#include <gtest/gtest.h>

#include "kiln/autograd/autograd.h"
#include "support/reference.h"

namespace kiln {
namespace {

struct Run {
  std::vector<std::vector<double>> grads;  // of the inputs that took one, in order
  std::uint64_t kernels = 0;               // launched by the backward pass and its reads
};

// backward(sum(f(inputs) * seed)) with require_grad on the inputs flagged in `takes_grad`.
template <class F>
Run run_backward(Device device, const std::vector<Tensor>& inputs, const std::vector<bool>& takes_grad, const Tensor& seed,
                 F f) {
  std::vector<Tensor> in;
  for (std::size_t i = 0; i < inputs.size(); ++i) in.push_back(takes_grad[i] ? require_grad(inputs[i]) : inputs[i]);
  const Tensor loss = sum(mul(f(in), seed));
  sync(device).get();
  const std::uint64_t before = counters(device).kernels_launched;
  const Gradients g = backward(loss);
  Run r;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (takes_grad[i]) r.grads.push_back(test::host_values(g.get(in[i])));
  r.kernels = counters(device).kernels_launched - before;
  return r;
}

template <class F> void expect_skipped(Device device, const std::vector<Tensor>& inputs, const Tensor& seed, F f) {
  const std::vector<bool> all(inputs.size(), true);
  std::vector<bool> all_but_first = all;
  all_but_first[0] = false;
  const Run every = run_backward(device, inputs, all, seed, f);
  const Run data_input = run_backward(device, inputs, all_but_first, seed, f);
  EXPECT_LT(data_input.kernels, every.kernels) << "the input that takes no gradient still got its product";
  ASSERT_EQ(data_input.grads.size() + 1, every.grads.size());
  for (std::size_t i = 0; i < data_input.grads.size(); ++i) {
    SCOPED_TRACE("input " + std::to_string(i + 1));
    EXPECT_TRUE(test::values_close(data_input.grads[i], every.grads[i + 1], test::Tolerance{1e-6, 1e-6}));
  }
}

class NeedsGrad : public ::testing::TestWithParam<Device> {};

TEST_P(NeedsGrad, MatmulSkipsTheDataInputsProduct) {
  Generator gen(5);
  const TensorOptions o{DType::f32, GetParam()};
  const Tensor x = randn(Shape{8, 48}, gen, o), w = randn(Shape{48, 24}, gen, o), seed = randn(Shape{8, 24}, gen, o);
  expect_skipped(GetParam(), {x, w}, seed, [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); });
}

TEST_P(NeedsGrad, MatmulWithATransposedWeightSkipsTheDataInputsProduct) {
  Generator gen(6);
  const TensorOptions o{DType::f32, GetParam()};
  const Tensor x = randn(Shape{8, 48}, gen, o), w = randn(Shape{24, 48}, gen, o), seed = randn(Shape{8, 24}, gen, o);
  expect_skipped(GetParam(), {x, w}, seed,
                 [](const std::vector<Tensor>& in) { return matmul(in[0], in[1], {.transpose_b = true}); });
}

TEST_P(NeedsGrad, ConvolutionSkipsTheDataInputsGradient) {
  Generator gen(7);
  const TensorOptions o{DType::f32, GetParam()};
  const Tensor x = randn(Shape{2, 3, 8, 8}, gen, o), w = randn(Shape{4, 3, 3, 3}, gen, o), b = randn(Shape{4}, gen, o);
  const Tensor seed = randn(Shape{2, 4, 8, 8}, gen, o);
  expect_skipped(GetParam(), {x, w, b}, seed, [](const std::vector<Tensor>& in) {
    return conv2d(in[0], in[1], in[2], ConvOptions{.padding = Window{1}});
  });
}

INSTANTIATE_TEST_SUITE_P(Devices, NeedsGrad, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
