// The training-step workloads (shared/WORKLOADS.md) as objects that hold their model, batch and
// optimizer and run one step: eagerly (backward, then `opt.step` with the module handed over, as
// a training loop does) or replayed (optim::RecordedStep, one message a step). train_bench.cpp
// times them with Google Benchmark, probes/train_step_interleaved.cpp in windows that take turns.
//   mlp_train_step: the MLP 784-512-512-10 with ReLU, cross entropy, Adam, batch 128.
//   transformer_train_step: one encoder layer (d_model 256, 4 heads, feed-forward 1024, dropout
//   0.1, post-norm, batch-first) on [8, 128, 256], MSE against a fixed target, AdamW.
#pragma once
#include <optional>
#include <utility>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/kiln.h"
#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"

namespace kiln::bench {

template <class M, class Opt> class TrainStepWorkload {
 public:
  using Loss = Tensor (*)(const M&, const Tensor&, const Tensor&);
  TrainStepWorkload(M model, Opt opt, Tensor x, Tensor y, Loss loss, bool recorded)
      : model_(std::move(model)), opt_(std::move(opt)), x_(std::move(x)), y_(std::move(y)), loss_(loss) {
    if (recorded) recorded_.emplace(optim::RecordedStep::record(model_, opt_, loss_, x_, y_));
  }
  // The step's model and optimizer are referred to by its recording: it stays where it is made.
  TrainStepWorkload(const TrainStepWorkload&) = delete;
  TrainStepWorkload& operator=(const TrainStepWorkload&) = delete;

  // One step; returns its loss.
  Tensor step() {
    if (recorded_) return (*recorded_)(x_, y_, opt_.lr());
    Tensor loss = loss_(model_, x_, y_);
    const Gradients grads = backward(loss);
    model_ = opt_.step(std::move(model_), grads);
    return loss;
  }

 private:
  M model_;
  Opt opt_;
  Tensor x_, y_;
  Loss loss_;
  std::optional<optim::RecordedStep> recorded_;
};

using MlpTrainStep = TrainStepWorkload<nn::Sequential, optim::Adam>;
using TransformerTrainStep = TrainStepWorkload<nn::TransformerEncoderLayer, optim::AdamW>;

inline Tensor mlp_loss(const nn::Sequential& m, const Tensor& x, const Tensor& y) { return nn::cross_entropy(m(x), y); }
inline Tensor transformer_loss(const nn::TransformerEncoderLayer& m, const Tensor& x, const Tensor& y) {
  return nn::mse_loss(m(x), y);
}

// Built in place (`std::optional::emplace` or a function's return): the workload does not move.
inline MlpTrainStep* make_mlp_train_step(std::optional<MlpTrainStep>& at, Device device, bool recorded) {
  manual_seed(3);
  nn::Sequential model(nn::Linear(784, 512, {.device = device}), nn::ReLU(),
                       nn::Linear(512, 512, {.device = device}), nn::ReLU(), nn::Linear(512, 10, {.device = device}));
  Generator gen(4);
  Tensor x = randn(Shape{128, 784}, gen, {DType::f32, device});
  Tensor target = to(cast(floor(mul(rand(Shape{128}, gen), 10.0)), DType::i64), device);
  return &at.emplace(std::move(model), optim::Adam({.lr = 1e-3}), std::move(x), std::move(target), mlp_loss, recorded);
}

inline TransformerTrainStep* make_transformer_train_step(std::optional<TransformerTrainStep>& at, Device device,
                                                         bool recorded) {
  manual_seed(3);
  nn::TransformerEncoderLayer layer(256, 4,
                                    {.dim_feedforward = 1024, .dropout = 0.1, .batch_first = true, .device = device});
  Generator gen(4);
  Tensor x = randn(Shape{8, 128, 256}, gen, {DType::f32, device});
  Tensor target = randn(Shape{8, 128, 256}, gen, {DType::f32, device});
  return &at.emplace(std::move(layer), optim::AdamW({.lr = 1e-4}), std::move(x), std::move(target), transformer_loss,
                     recorded);
}

}  // namespace kiln::bench
