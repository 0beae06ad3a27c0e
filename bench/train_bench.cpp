// Training-step workloads (shared/WORKLOADS.md): mlp_train_step, the MLP 784-512-512-10 with
// ReLU, cross entropy, Adam, batch 128; transformer_train_step, one encoder layer (d_model 256,
// 4 heads, feed-forward 1024, dropout 0.1, post-norm, batch-first) on [8, 128, 256], MSE against
// a fixed target, AdamW. One iteration is forward, backward and the optimizer step, with the
// module handed over (`model = opt.step(std::move(model), grads)`) as a training loop does.
// "/recorded": the same step recorded once (optim::RecordedStep) and replayed, one message a step.
// torch_twin.py runs the same steps in PyTorch (zero_grad, forward, backward, step).
#include "kiln/autograd/autograd.h"
#include "bench/bench_common.h"
#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"

namespace kiln::bench {
namespace {

// Runs `step` (which returns the loss) once untimed, then times it, waiting for the loss.
template <class Step> void time_steps(benchmark::State& state, Device device, Step step) {
  step().template to_vector<float>().get();
  CounterDelta delta(device);
  for (auto _ : state) step().template to_vector<float>().get();
  delta.report(state);
  state.counters["steps_per_iter"] = 1;
}

void mlp_train_step(benchmark::State& state, Device device, bool recorded) {
  manual_seed(3);
  nn::Sequential model(nn::Linear(784, 512, {.device = device}), nn::ReLU(),
                       nn::Linear(512, 512, {.device = device}), nn::ReLU(), nn::Linear(512, 10, {.device = device}));
  Generator gen(4);
  const Tensor x = randn(Shape{128, 784}, gen, {DType::f32, device});
  const Tensor target = to(cast(floor(mul(rand(Shape{128}, gen), 10.0)), DType::i64), device);
  optim::Adam opt({.lr = 1e-3});
  const auto loss_of = [](const nn::Sequential& m, const Tensor& in, const Tensor& y) {
    return nn::cross_entropy(m(in), y);
  };
  if (recorded) {
    auto step = optim::RecordedStep::record(model, opt, loss_of, x, target);
    time_steps(state, device, [&] { return step(x, target, opt.lr()); });
    return;
  }
  time_steps(state, device, [&] {
    Tensor loss = loss_of(model, x, target);
    const Gradients grads = backward(loss);
    model = opt.step(std::move(model), grads);
    return loss;
  });
}

void transformer_train_step(benchmark::State& state, Device device, bool recorded) {
  manual_seed(3);
  nn::TransformerEncoderLayer layer(256, 4, {.dim_feedforward = 1024, .dropout = 0.1, .batch_first = true, .device = device});
  Generator gen(4);
  const Tensor x = randn(Shape{8, 128, 256}, gen, {DType::f32, device});
  const Tensor target = randn(Shape{8, 128, 256}, gen, {DType::f32, device});
  optim::AdamW opt({.lr = 1e-4});
  const auto loss_of = [](const nn::TransformerEncoderLayer& m, const Tensor& in, const Tensor& y) {
    return nn::mse_loss(m(in), y);
  };
  if (recorded) {
    auto step = optim::RecordedStep::record(layer, opt, loss_of, x, target);
    time_steps(state, device, [&] { return step(x, target, opt.lr()); });
    return;
  }
  time_steps(state, device, [&] {
    Tensor loss = loss_of(layer, x, target);
    const Gradients grads = backward(loss);
    layer = opt.step(std::move(layer), grads);
    return loss;
  });
}

}  // namespace

void register_train(Device device) {
  const Policy slow{0.5, 3};
  apply(benchmark::RegisterBenchmark("mlp_train_step", mlp_train_step, device, false), slow);
  apply(benchmark::RegisterBenchmark("mlp_train_step/recorded", mlp_train_step, device, true), slow);
  apply(benchmark::RegisterBenchmark("transformer_train_step", transformer_train_step, device, false), slow);
  apply(benchmark::RegisterBenchmark("transformer_train_step/recorded", transformer_train_step, device, true), slow);
}

}  // namespace kiln::bench
