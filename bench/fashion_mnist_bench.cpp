// fashion_mnist_epoch (shared/WORKLOADS.md): one training epoch of the main job's CNN
// (examples/fashion_mnist_model.h) on Fashion-MNIST's 60,000 images, its loader included: batches
// of 128, shuffled, one worker; Adam at lr 1e-3; cross entropy. The loop is the one the Learner
// runs, without its metrics and dashboard, as the PyTorch twin (bench/fashion_mnist_twin.py, run
// by torch_twin.py) times it. Skipped with a message where Debian's dataset-fashion-mnist is
// missing.
#include <filesystem>

#include "autograd/autograd.h"
#include "bench/bench_common.h"
#include "data/data.h"
#include "examples/fashion_mnist_model.h"
#include "optim/optim.h"

namespace kiln::bench {
namespace {

void fashion_mnist_epoch(benchmark::State& state, Device device) {
  if (!std::filesystem::exists(data::kDebianFashionMnist)) {
    state.SkipWithError("Fashion-MNIST is missing: apt-get install dataset-fashion-mnist (./dev does)");
    return;
  }
  manual_seed(0);
  const data::Normalize normalize{{kFashionMnistMean}, {kFashionMnistStd}};
  const auto train_set = data::map(data::fashion_mnist(data::Split::train), normalize);
  const data::DataLoader loader(train_set, {.batch_size = 128, .shuffle = true, .seed = 0, .workers = 1, .device = device});
  SmallCNN model(device);
  optim::Adam opt({.lr = 1e-3});
  auto step = [&](const data::Batch& batch) {
    Tensor loss = nn::cross_entropy(model(batch.inputs), batch.labels);
    const Gradients grads = backward(loss);
    model = opt.step(std::move(model), grads);
    return loss;
  };
  {  // warm-up: a few steps compile what the epoch needs
    int n = 0;
    for (const data::Batch& batch : loader.epoch(0)) {
      if (n++ == 3) break;
      step(batch).to_vector<float>().get();
    }
  }
  std::uint64_t epoch = 1;
  for (auto _ : state) {
    Tensor loss;
    for (const data::Batch& batch : loader.epoch(epoch)) loss = step(batch);
    loss.to_vector<float>().get();
    ++epoch;
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
}

}  // namespace kiln::bench
