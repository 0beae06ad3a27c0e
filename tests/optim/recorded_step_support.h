// What the recorded-step suites share (tests/optim/test_recorded_step.cpp on the CPU,
// tests/devices/vulkan/test_vulkan_recorded_step.cpp): two small models, batches, and a run of
// the same steps eagerly (backward + opt.step with the module moved in) and recorded, whose
// losses, parameters, buffers and optimizer states must agree bit for bit.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"
#include "support/reference.h"

namespace kiln::test {

struct StepMlp : nn::Module {
  nn::Linear fc1, fc2;
  explicit StepMlp(Device d = Device::cpu()) : fc1(8, 16, {.device = d}), fc2(16, 4, {.device = d}) {}
  Tensor forward(const Tensor& x) const { return fc2(relu(fc1(x))); }
  KILN_MODULE(StepMlp, fc1, fc2)
};

// Convolution, batch norm (its running statistics are state the step updates), a classifier.
struct StepCnn : nn::Module {
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
  nn::Linear fc;
  explicit StepCnn(Device d = Device::cpu())
      : conv(2, 4, {3}, {.padding = {1}, .device = d}), bn(4, {.device = d}), fc(4 * 5 * 5, 3, {.device = d}) {}
  Tensor forward(const Tensor& x) const { return fc(flatten(relu(bn(conv(x))), 1)); }
  KILN_MODULE(StepCnn, conv, bn, fc)
};

struct StepBatch {
  Tensor x, y;
};

// `n` batches of inputs [batch, *shape] and class labels below `classes`.
inline std::vector<StepBatch> step_batches(int n, std::int64_t batch, const Shape& shape, std::int64_t classes, Device d,
                                           std::uint64_t seed = 7) {
  Generator gen(seed);
  Shape full{batch};
  for (std::int64_t s : shape) full.push_back(s);
  std::vector<StepBatch> out;
  for (int i = 0; i < n; ++i) {
    Tensor x = randn(full, gen, {DType::f32, d});
    Tensor y = to(cast(floor(mul(rand(Shape{batch}, gen), static_cast<double>(classes))), DType::i64), d);
    out.push_back({std::move(x), std::move(y)});
  }
  return out;
}

template <class M> Tensor step_loss(const M& m, const Tensor& x, const Tensor& y) { return nn::cross_entropy(m(x), y); }

// What a run leaves: every step's loss, the module's state_dict and the optimizer's state, as bits.
struct StepRun {
  std::vector<std::uint32_t> losses;
  std::vector<std::vector<std::uint32_t>> state;  // state_dict tensors (f32 as bits; i64 counts as their values)
  std::vector<std::vector<std::uint32_t>> moments;
  std::map<std::string, double> numbers;
};

inline std::vector<std::uint32_t> tensor_bits(const Tensor& t) {
  if (t.dtype() == DType::i64) {
    std::vector<std::uint32_t> out;
    for (std::int64_t v : t.to_vector<std::int64_t>().get()) out.push_back(static_cast<std::uint32_t>(v));
    return out;
  }
  return float_bits(t.to_vector<float>().get());
}

template <class M> StepRun finish_run(const M& model, const optim::Optimizer& opt, std::vector<std::uint32_t> losses) {
  StepRun r;
  r.losses = std::move(losses);
  for (const nn::NamedTensor& t : model.state_dict()) r.state.push_back(tensor_bits(t.tensor));
  const optim::State s = opt.state();
  for (const nn::NamedTensor& t : s.tensors) r.moments.push_back(tensor_bits(t.tensor));
  r.numbers = s.numbers;
  return r;
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>()>;

// `steps` steps at the learning rates of a cosine schedule from `lr`, eagerly.
template <class M>
StepRun eager_run(M model, const MakeOptimizer& make, double lr, const std::vector<StepBatch>& batches) {
  auto opt = make();
  optim::CosineAnnealingLr schedule(lr, static_cast<std::int64_t>(batches.size()));
  std::vector<std::uint32_t> losses;
  for (const StepBatch& b : batches) {
    const Tensor loss = step_loss(model, b.x, b.y);
    const Gradients grads = backward(loss);
    model = opt->step(schedule.lr(), std::move(model), grads);
    schedule.step();
    losses.push_back(float_bits(loss.to_vector<float>().get())[0]);
  }
  return finish_run(model, *opt, std::move(losses));
}

// The same steps through one RecordedStep.
template <class M>
StepRun recorded_run(M model, const MakeOptimizer& make, double lr, const std::vector<StepBatch>& batches,
                     std::int64_t* recordings = nullptr) {
  auto opt = make();
  optim::CosineAnnealingLr schedule(lr, static_cast<std::int64_t>(batches.size()));
  auto step = optim::RecordedStep::record(model, *opt, step_loss<M>, batches[0].x, batches[0].y);
  std::vector<std::uint32_t> losses;
  for (const StepBatch& b : batches) {
    const Tensor loss = step(b.x, b.y, schedule.lr());
    schedule.step();
    losses.push_back(float_bits(loss.to_vector<float>().get())[0]);
  }
  if (recordings) *recordings = step.recordings();
  return finish_run(model, *opt, std::move(losses));
}

inline void expect_same_run(const StepRun& eager, const StepRun& recorded) {
  EXPECT_EQ(recorded.losses, eager.losses);
  ASSERT_EQ(recorded.state.size(), eager.state.size());
  for (std::size_t i = 0; i < eager.state.size(); ++i) EXPECT_EQ(recorded.state[i], eager.state[i]) << "state_dict #" << i;
  ASSERT_EQ(recorded.moments.size(), eager.moments.size());
  for (std::size_t i = 0; i < eager.moments.size(); ++i)
    EXPECT_EQ(recorded.moments[i], eager.moments[i]) << "moment #" << i;
  EXPECT_EQ(recorded.numbers, eager.numbers);
}

inline MakeOptimizer sgd_momentum_wd() {
  return [] { return std::make_unique<optim::Sgd>(optim::SgdOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-2}); };
}
inline MakeOptimizer adam() {
  return [] { return std::make_unique<optim::Adam>(optim::AdamOptions{.lr = 1e-2}); };
}
inline MakeOptimizer adamw() {
  return [] { return std::make_unique<optim::AdamW>(optim::AdamWOptions{.lr = 1e-2, .weight_decay = 0.05}); };
}

}  // namespace kiln::test
