// Training-step workloads (shared/WORKLOADS.md): mlp_train_step, the MLP 784-512-512-10 with
// ReLU, cross entropy, Adam, batch 128; transformer_train_step, one encoder layer (d_model 256,
// 4 heads, feed-forward 1024, dropout 0.1, post-norm, batch-first) on [8, 128, 256], MSE against
// a fixed target, AdamW. One iteration is forward, backward and the optimizer step, with the
// module handed over (`model = opt.step(std::move(model), grads)`) as a training loop does.
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

void mlp_train_step(benchmark::State& state, Device device) {
  manual_seed(3);
  nn::Sequential model(nn::Linear(784, 512, {.device = device}), nn::ReLU(),
                       nn::Linear(512, 512, {.device = device}), nn::ReLU(), nn::Linear(512, 10, {.device = device}));
  Generator gen(4);
  const Tensor x = randn(Shape{128, 784}, gen, {DType::f32, device});
  const Tensor target = to(cast(floor(mul(rand(Shape{128}, gen), 10.0)), DType::i64), device);
  optim::Adam opt({.lr = 1e-3});
  time_steps(state, device, [&] {
    Tensor loss = nn::cross_entropy(model(x), target);
    const Gradients grads = backward(loss);
    model = opt.step(std::move(model), grads);
    return loss;
  });
}

void transformer_train_step(benchmark::State& state, Device device) {
  manual_seed(3);
  nn::TransformerEncoderLayer layer(256, 4, {.dim_feedforward = 1024, .dropout = 0.1, .batch_first = true, .device = device});
  Generator gen(4);
  const Tensor x = randn(Shape{8, 128, 256}, gen, {DType::f32, device});
  const Tensor target = randn(Shape{8, 128, 256}, gen, {DType::f32, device});
  optim::AdamW opt({.lr = 1e-4});
  time_steps(state, device, [&] {
    Tensor loss = nn::mse_loss(layer(x), target);
    const Gradients grads = backward(loss);
    layer = opt.step(std::move(layer), grads);
    return loss;
  });
}

}  // namespace

void register_train(Device device) {
  const Policy slow{0.5, 3};
  apply(benchmark::RegisterBenchmark("mlp_train_step", mlp_train_step, device), slow);
  apply(benchmark::RegisterBenchmark("transformer_train_step", transformer_train_step, device), slow);
}

}  // namespace kiln::bench
