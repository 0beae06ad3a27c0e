// The small task the Learner suites train on (which of 3 regions a 2-D point is in), shared by
// test_learner.cpp and test_learner_resume.cpp: the model, the data, the step and a Learner made
// the same way for every run, so that two runs can be compared bit for bit.
#pragma once
#include <filesystem>
#include <memory>
#include <vector>

#include "kiln/data/data.h"
#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"
#include "kiln/train/learner.h"

namespace kiln::train::fixture {

// With dropout: a resumed run must also draw the masks that the uninterrupted run draws.
struct Classifier : nn::Module {
  nn::Linear fc1{2, 16}, fc2{16, 3};
  nn::Dropout drop{{.p = 0.1, .seed = 17}};
  Tensor forward(const Tensor& x) const { return fc2(drop(relu(fc1(x)))); }
  KILN_MODULE(Classifier, fc1, fc2, drop)
};

// 256 points in [-1, 1]^2, class by the sign pattern of x + y and x - y (3 classes).
inline data::DatasetPtr<data::Example> points(std::uint64_t seed) {
  Generator g(seed);
  const std::vector<float> xy = uniform(Shape{256, 2}, -1, 1, g).to_vector<float>().get();
  std::vector<data::Example> items;
  for (std::size_t i = 0; i < 256; ++i) {
    const float x = xy[2 * i], y = xy[2 * i + 1];
    const std::int64_t label = x + y > 0.3f ? 0 : x - y > 0 ? 1 : 2;
    items.push_back({{x, y}, Shape{2}, label, {}});
  }
  return data::in_memory(std::move(items));
}

inline StepOutput step(const Classifier& m, const data::Batch& b) {
  Tensor logits = m(b.inputs);
  return {nn::cross_entropy(logits, b.labels), logits, b.labels, b.size()};
}

// Adam with a learning rate of 1e-2 and `schedule` (default: halved every 16 steps), the loss and
// the accuracy; the dashboard off unless the options ask for one.
inline Learner<Classifier> make(LearnerOptions options, Learner<Classifier>::Step s = step,
                                std::unique_ptr<optim::LrScheduler> schedule = nullptr) {
  manual_seed(5);  // the same initial weights for every run
  if (options.dashboard == DashboardMode::automatic) options.dashboard = DashboardMode::off;
  if (!schedule) schedule = std::make_unique<optim::StepLr>(1e-2, 16, 0.5);
  Learner<Classifier> learner(Classifier{}, std::make_unique<optim::Adam>(optim::AdamOptions{.lr = 1e-2}),
                              std::move(schedule), std::move(s), options);
  learner.add_metric(accuracy());
  return learner;
}

// 8 training batches an epoch (shuffled), 4 of validation.
inline const data::DataLoader<>& train_loader() {
  static const data::DataLoader<> loader(points(1), {.batch_size = 32, .shuffle = true, .seed = 3});
  return loader;
}
inline const data::DataLoader<>& valid_loader() {
  static const data::DataLoader<> loader(points(2), {.batch_size = 64});
  return loader;
}

// Every parameter's values, in order.
inline std::vector<float> weights(const nn::Module& m) {
  std::vector<float> out;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.to_vector<float>().get();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// No dropout: the same examples give the same gradients in any batching.
struct Mlp : nn::Module {
  nn::Linear fc1{2, 16}, fc2{16, 3};
  Tensor forward(const Tensor& x) const { return fc2(relu(fc1(x))); }
  KILN_MODULE(Mlp, fc1, fc2)
};

inline StepOutput mlp_step(const Mlp& m, const data::Batch& b) {
  Tensor logits = m(b.inputs);
  return {nn::cross_entropy(logits, b.labels), logits, b.labels, b.size()};
}

}  // namespace kiln::train::fixture
