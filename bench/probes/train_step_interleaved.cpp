// kiln_train_step_interleaved: training steps eager and recorded (optim::RecordedStep) in one
// process, in windows that take turns, so that both see the same spells of the machine (the
// contract's figures run the two variants seconds apart, and on the shared 2-core VM a spell
// moves a step's time by a third).
//
//   kiln_train_step_interleaved [--rounds N] [--window-ms M]
//
// Workloads: mlp_train_step and transformer_train_step (bench/train_workloads.h), and a small
// MLP (64-128-10, batch 32, Adam) whose step is a few microseconds of arithmetic, to show what
// a step costs the host. Each round runs each variant for a window (default 300 ms, after one
// untimed step), every step waiting for its loss. One JSON line per workload: each variant's
// median ms/step over the rounds, and the median, smallest and largest per-round ratio
// recorded / eager (below 1: the recorded step is faster).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/train_workloads.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds per step over a window of `ms`.
double window(const std::function<kiln::Tensor()>& step, double ms) {
  const Clock::time_point start = Clock::now();
  int steps = 0;
  double elapsed = 0;
  do {
    step().to_vector<float>().get();
    ++steps;
    elapsed = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  } while (elapsed < ms);
  return elapsed / steps;
}

void compare(const char* id, const std::function<kiln::Tensor()>& eager, const std::function<kiln::Tensor()>& recorded,
             int rounds, double ms) {
  eager().to_vector<float>().get();
  recorded().to_vector<float>().get();
  std::vector<double> e, r, ratio;
  for (int i = 0; i < rounds; ++i) {
    e.push_back(window(eager, ms));
    r.push_back(window(recorded, ms));
    ratio.push_back(r.back() / e.back());
  }
  std::printf(
      "{\"id\": \"%s\", \"unit\": \"ms/step\", \"eager\": %.4g, \"recorded\": %.4g, \"ratio_median\": %.3f, "
      "\"ratio_min\": %.3f, \"ratio_max\": %.3f, \"rounds\": %d}\n",
      id, median(e), median(r), median(ratio), *std::min_element(ratio.begin(), ratio.end()),
      *std::max_element(ratio.begin(), ratio.end()), rounds);
  std::fflush(stdout);
}

kiln::Tensor small_loss(const kiln::nn::Sequential& m, const kiln::Tensor& x, const kiln::Tensor& y) {
  return kiln::nn::cross_entropy(m(x), y);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln;
  using namespace kiln::bench;
  int rounds = 10;
  double ms = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--window-ms") ms = std::max(1.0, std::atof(argv[i + 1]));
  }
  const Device cpu = Device::cpu();
  {
    std::optional<MlpTrainStep> a, b;
    MlpTrainStep* eager = make_mlp_train_step(a, cpu, false);
    MlpTrainStep* recorded = make_mlp_train_step(b, cpu, true);
    compare("mlp_train_step", [=] { return eager->step(); }, [=] { return recorded->step(); }, rounds, ms);
  }
  {
    std::optional<TransformerTrainStep> a, b;
    TransformerTrainStep* eager = make_transformer_train_step(a, cpu, false);
    TransformerTrainStep* recorded = make_transformer_train_step(b, cpu, true);
    compare("transformer_train_step", [=] { return eager->step(); }, [=] { return recorded->step(); }, rounds, ms);
  }
  {
    using Small = TrainStepWorkload<nn::Sequential, optim::Adam>;
    const auto make = [](std::optional<Small>& at, bool recorded) {
      manual_seed(3);
      Generator gen(4);
      Tensor x = randn(Shape{32, 64}, gen);
      Tensor y = cast(floor(mul(rand(Shape{32}, gen), 10.0)), DType::i64);
      return &at.emplace(nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10)), optim::Adam({.lr = 1e-3}),
                         std::move(x), std::move(y), small_loss, recorded);
    };
    std::optional<Small> a, b;
    Small* eager = make(a, false);
    Small* recorded = make(b, true);
    compare("small_mlp_train_step", [=] { return eager->step(); }, [=] { return recorded->step(); }, rounds, ms);
  }
  sync(cpu).get();
  return 0;
}
