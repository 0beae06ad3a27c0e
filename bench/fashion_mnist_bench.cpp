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
//
// fashion_mnist_first_epoch (GPUs): the epoch in a fresh process whose kernel caches are empty
// (a new KILN_CACHE_DIR), as on a machine that never ran kiln: every kernel compiles and every
// matmul shape class autotunes inside it. This binary runs itself for it (the hidden
// fashion_mnist_cold_epochs, registered only in that child), which times its first epoch with no
// warm-up and its second; the figure is the first, and first_over_warm their ratio. It also
// times the first epoch's first ten steps one by one (each waited for): first_step_ms,
// tenth_step_ms and first_step_over_tenth, a new model's first step against its tenth.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "examples/fashion_mnist_model.h"
#include "kiln/autograd/autograd.h"
#include "kiln/data/data.h"
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

// The child's two epochs: the first from nothing (no warm-up step), the second warm.
void fashion_mnist_cold_epochs(benchmark::State& state, Device device) {
  if (!have_dataset(state)) return;
  for (auto _ : state) {
    manual_seed(0);
    const auto loader = train_loader(device);
    SmallCNN model(device);
    optim::Adam opt({.lr = 1e-3});
    double seconds[2] = {};
    std::vector<double> step_s;  // the first epoch's first 10 steps, each waited for
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      Tensor loss;
      for (const data::Batch& batch : loader.epoch(epoch)) {
        const auto s0 = std::chrono::steady_clock::now();
        loss = nn::cross_entropy(model(batch.inputs), batch.labels);
        model = opt.step(std::move(model), backward(loss));
        if (epoch == 0 && step_s.size() < 10) {
          sync(device).get();  // the updated weights too, not only the loss
          step_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count());
        }
      }
      loss.to_vector<float>().get();
      seconds[epoch] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    state.counters["first_s"] = seconds[0];
    state.counters["warm_s"] = seconds[1];
    if (step_s.size() == 10) {
      state.counters["first_step_s"] = step_s.front();
      state.counters["tenth_step_s"] = step_s.back();
    }
  }
}

// A number after `"<name>": ` in the child's JSON output, or -1.
double json_number(const std::string& text, const std::string& name) {
  const std::size_t at = text.find("\"" + name + "\": ");
  return at == std::string::npos ? -1 : std::strtod(text.c_str() + at + name.size() + 4, nullptr);
}

void fashion_mnist_first_epoch(benchmark::State& state, Device device) {
  if (!have_dataset(state)) return;
  for (auto _ : state) {
    char dir[] = "/tmp/kiln-first-epoch-XXXXXX";
    if (!mkdtemp(dir)) return state.SkipWithError("cannot make a temporary kernel cache directory");
    const std::string command = std::string("KILN_CACHE_DIR=") + dir +
                                " KILN_BENCH_CHILD=1 /proc/self/exe --device=" + device.str() +
                                " --benchmark_filter=^fashion_mnist_cold_epochs/ --benchmark_format=json";
    std::string out;
    int status = -1;
    if (FILE* child = popen(command.c_str(), "r")) {
      char buf[4096];
      for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, child)) > 0;) out.append(buf, n);
      status = pclose(child);
    }
    std::filesystem::remove_all(dir);
    const double first = json_number(out, "first_s"), warm = json_number(out, "warm_s");
    if (first <= 0 || warm <= 0) {
      // Say why: the child's own error (its JSON's error_message), else how it ended.
      // (Built by appending: GCC 12 warns falsely on std::string concatenations.)
      std::string why = "the cold child process reported no epochs (exit status ";
      why += std::to_string(status);
      if (const std::size_t at = out.find("\"error_message\": \""); at != std::string::npos) {
        why += ", its error: ";
        why.append(out, at + 18, out.find('"', at + 18) - (at + 18));
      }
      why += ")";
      return state.SkipWithError(why.c_str());
    }
    state.SetIterationTime(first);
    state.counters["warm_s"] = warm;
    state.counters["first_over_warm"] = first / warm;
    // A new model's first training step against its tenth, both from nothing, each waited for.
    if (const double a = json_number(out, "first_step_s"), b = json_number(out, "tenth_step_s"); a > 0 && b > 0) {
      state.counters["first_step_ms"] = 1e3 * a;
      state.counters["tenth_step_ms"] = 1e3 * b;
      state.counters["first_step_over_tenth"] = a / b;
    }
  }
  state.counters["epochs_per_iter"] = 1;
}

}  // namespace

void register_fashion_mnist(Device device) {
  if (std::getenv("KILN_BENCH_CHILD")) {
    benchmark::RegisterBenchmark("fashion_mnist_cold_epochs", fashion_mnist_cold_epochs, device)
        ->UseRealTime()
        ->Unit(benchmark::kSecond)
        ->Iterations(1);
    return;
  }
  if (device != Device::cpu())
    benchmark::RegisterBenchmark("fashion_mnist_first_epoch", fashion_mnist_first_epoch, device)
        ->UseManualTime()
        ->Unit(benchmark::kSecond)
        ->Iterations(1)
        ->Repetitions(1);
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
