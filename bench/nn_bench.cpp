// Convolution workloads (shared/WORKLOADS.md): conv2d, a 3x3 convolution with padding 1 of an
// [8, 64, 56, 56] input by [64, 64, 3, 3] weights; conv2d_backward, its input and weight
// gradients (each iteration runs the forward that backward needs, in kiln and in the twin);
// resnet_block, conv-bn-relu-conv-bn + residual add, relu, forward and backward in training
// mode, as nn modules; max_pool2d, a ResNet stem's 3x3 stride-2 max pooling forward and backward;
// on a GPU also conv2d_f16. torch_twin.py runs the same in PyTorch.
#include "kiln/autograd/autograd.h"
#include "bench/bench_common.h"
#include "kiln/nn/nn.h"

namespace kiln::bench {
namespace {

constexpr std::int64_t kN = 8, kC = 64, kH = 56, kW = 56;
// One 3x3 convolution's multiply-adds as flops: 2 N K C H W 9.
constexpr double kConvFlops = 2.0 * kN * kC * kC * kH * kW * 9;

struct ResidualBlock : nn::Module {
  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d bn1, bn2;
  ResidualBlock(std::int64_t c, Device d)
      : conv1(c, c, {3}, {.padding = {1}, .bias = false, .device = d}),
        conv2(c, c, {3}, {.padding = {1}, .bias = false, .device = d}), bn1(c, {.device = d}), bn2(c, {.device = d}) {}
  Tensor forward(const Tensor& x) const { return relu(add(bn2(conv2(relu(bn1(conv1(x))))), x)); }
  KILN_MODULE(ResidualBlock, conv1, bn1, conv2, bn2)
};

// `dtype`: f32, or f16 on a GPU (inputs drawn in f32 and cast before the timed loop).
void conv2d_forward(benchmark::State& state, Device device, DType dtype) {
  Generator gen(3);
  const Tensor x = cast(randn(Shape{kN, kC, kH, kW}, gen, {DType::f32, device}), dtype);
  const Tensor w = cast(mul(randn(Shape{kC, kC, 3, 3}, gen, {DType::f32, device}), 0.05), dtype);
  const ConvOptions pad1{.padding = {1}};
  {
    Tensor warm = conv2d(x, w, {}, pad1);
    wait(device);
  }
  CounterDelta delta(device);
  for (auto _ : state) {
    Tensor y = conv2d(x, w, {}, pad1);
    wait(device);
  }
  delta.report(state);
  set_flops(state, kConvFlops);
}

void conv2d_backward(benchmark::State& state, Device device) {
  Generator gen(3);
  const Tensor x = require_grad(randn(Shape{kN, kC, kH, kW}, gen, {DType::f32, device}));
  const Tensor w = require_grad(mul(randn(Shape{kC, kC, 3, 3}, gen, {DType::f32, device}), 0.05));
  const Tensor seed = randn(Shape{kN, kC, kH, kW}, gen, {DType::f32, device});
  const ConvOptions pad1{.padding = {1}};
  auto step = [&] {
    Gradients g = backward(conv2d(x, w, {}, pad1), seed);
    wait(device);
  };
  step();
  CounterDelta delta(device);
  for (auto _ : state) step();
  delta.report(state);
  set_flops(state, 2 * kConvFlops);  // 4 N C K H W 9: the input's and the weight's gradient
}

void resnet_block(benchmark::State& state, Device device) {
  manual_seed(3);
  const ResidualBlock block(kC, device);
  Generator gen(4);
  const Tensor x = require_grad(randn(Shape{kN, kC, kH, kW}, gen, {DType::f32, device}));
  const Tensor seed = randn(Shape{kN, kC, kH, kW}, gen, {DType::f32, device});
  auto step = [&] {
    Gradients g = backward(block(x), seed);
    wait(device);
  };
  step();
  CounterDelta delta(device);
  for (auto _ : state) step();
  delta.report(state);
  state.counters["steps_per_iter"] = 1;
}

// A ResNet stem's pooling: [8, 64, 112, 112], kernel 3, stride 2, padding 1, forward and the
// input's gradient, ms per step.
void max_pool2d_step(benchmark::State& state, Device device) {
  Generator gen(5);
  const Tensor x = require_grad(randn(Shape{kN, kC, 2 * kH, 2 * kW}, gen, {DType::f32, device}));
  const Tensor seed = randn(Shape{kN, kC, kH, kW}, gen, {DType::f32, device});
  const PoolOptions pool{.kernel = {3}, .stride = {2}, .padding = {1}};
  auto step = [&] {
    Gradients g = backward(max_pool2d(x, pool), seed);
    wait(device);
  };
  step();
  CounterDelta delta(device);
  for (auto _ : state) step();
  delta.report(state);
  state.counters["steps_per_iter"] = 1;
}

}  // namespace

void register_nn(Device device) {
  const Policy slow{0.5, 3};
  apply(benchmark::RegisterBenchmark("conv2d", conv2d_forward, device, DType::f32), slow);
  if (device != Device::cpu())
    apply(benchmark::RegisterBenchmark("conv2d_f16", conv2d_forward, device, DType::f16), slow);
  apply(benchmark::RegisterBenchmark("conv2d_backward", conv2d_backward, device), slow);
  apply(benchmark::RegisterBenchmark("resnet_block", resnet_block, device), slow);
  apply(benchmark::RegisterBenchmark("max_pool2d", max_pool2d_step, device), slow);
}

}  // namespace kiln::bench
