// fashion_mnist_epoch (shared/WORKLOADS.md): one training epoch of the main job's CNN
// (examples/fashion_mnist_model.h) on Fashion-MNIST's 60,000 images, its loader included: batches
// of 128, shuffled, one worker; Adam at lr 1e-3; cross entropy. The loop is the one the Learner
// runs, without its metrics and dashboard, as the PyTorch twin (bench/fashion_mnist_twin.py, run
// by torch_twin.py) times it. Skipped with a message where Debian's dataset-fashion-mnist is
// missing.
//
// fashion_mnist_learner_epoch: the same epoch through train::Learner, as the main job runs it
// (the loss and accuracy metrics, read for the dashboard a few times a second; the dashboard
// off), so the Learner's cost over the bare loop shows as the ratio of the two. Its twin is the
// twin's loop with the same metrics kept and read.
#include <filesystem>

#include "kiln/autograd/autograd.h"
#include "bench/bench_common.h"
#include "kiln/data/data.h"
#include "examples/fashion_mnist_model.h"
#include "kiln/optim/optim.h"
#include "kiln/train/learner.h"

namespace kiln::bench {
namespace {

bool have_dataset(benchmark::State& state) {
  if (std::filesystem::exists(data::kDebianFashionMnist)) return true;
  state.SkipWithError("Fashion-MNIST is missing: apt-get install dataset-fashion-mnist (./dev does)");
  return false;
}

data::DataLoader<data::Example> train_loader(Device device) {
  const data::Normalize normalize{{kFashionMnistMean}, {kFashionMnistStd}};
  const auto train_set = data::map(data::fashion_mnist(data::Split::train), normalize);
  return data::DataLoader(train_set, {.batch_size = 128, .shuffle = true, .seed = 0, .workers = 1, .device = device});
}

// A few steps compile what the epoch needs.
void warm_up(SmallCNN& model, optim::Adam& opt, const data::DataLoader<data::Example>& loader) {
  int n = 0;
  for (const data::Batch& batch : loader.epoch(0)) {
    if (n++ == 3) break;
    Tensor loss = nn::cross_entropy(model(batch.inputs), batch.labels);
    model = opt.step(std::move(model), backward(loss));
    loss.to_vector<float>().get();
  }
}

void fashion_mnist_epoch(benchmark::State& state, Device device) {
  if (!have_dataset(state)) return;
  manual_seed(0);
  const auto loader = train_loader(device);
  SmallCNN model(device);
  optim::Adam opt({.lr = 1e-3});
  auto step = [&](const data::Batch& batch) {
    Tensor loss = nn::cross_entropy(model(batch.inputs), batch.labels);
    const Gradients grads = backward(loss);
    model = opt.step(std::move(model), grads);
    return loss;
  };
  warm_up(model, opt, loader);
  std::uint64_t epoch = 1;
  for (auto _ : state) {
    Tensor loss;
    for (const data::Batch& batch : loader.epoch(epoch)) loss = step(batch);
    loss.to_vector<float>().get();
    ++epoch;
  }
  state.counters["epochs_per_iter"] = 1;
}

void fashion_mnist_learner_epoch(benchmark::State& state, Device device) {
  if (!have_dataset(state)) return;
  manual_seed(0);
  const auto loader = train_loader(device);
  SmallCNN model(device);
  {
    optim::Adam opt({.lr = 1e-3});
    warm_up(model, opt, loader);
  }
  for (auto _ : state) {
    train::Learner learner(
        model, std::make_unique<optim::Adam>(optim::AdamOptions{.lr = 1e-3}), std::make_unique<optim::ConstantLr>(1e-3),
        [](const SmallCNN& m, const data::Batch& batch) {
          Tensor logits = m(batch.inputs);
          return train::StepOutput{nn::cross_entropy(logits, batch.labels), logits, batch.labels, batch.size()};
        },
        {.epochs = 1, .dashboard = train::DashboardMode::off, .handle_ctrl_c = false});
    learner.add_metric(train::accuracy());
    learner.fit(loader);
    model = learner.model();
  }
  state.counters["epochs_per_iter"] = 1;
}

}  // namespace

void register_fashion_mnist(Device device) {
  benchmark::RegisterBenchmark("fashion_mnist_epoch", fashion_mnist_epoch, device)
      ->UseRealTime()
      ->Unit(benchmark::kSecond)
      ->Iterations(1)
      ->Repetitions(1);
  benchmark::RegisterBenchmark("fashion_mnist_learner_epoch", fashion_mnist_learner_epoch, device)
      ->UseRealTime()
      ->Unit(benchmark::kSecond)
      ->Iterations(1)
      ->Repetitions(1);
}

}  // namespace kiln::bench
