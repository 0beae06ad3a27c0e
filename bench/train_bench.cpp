// Training-step workloads (shared/WORKLOADS.md; bench/train_workloads.h builds them):
// mlp_train_step and transformer_train_step. One iteration is forward, backward and the
// optimizer step, with the module handed over (`model = opt.step(std::move(model), grads)`) as a
// training loop does; "/recorded": the same step recorded once (optim::RecordedStep) and
// replayed, one message a step. torch_twin.py runs the same steps in PyTorch (zero_grad,
// forward, backward, step).
#include "bench/bench_common.h"
#include "bench/train_workloads.h"

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
  std::optional<MlpTrainStep> at;
  MlpTrainStep* w = make_mlp_train_step(at, device, recorded);
  time_steps(state, device, [w] { return w->step(); });
}

void transformer_train_step(benchmark::State& state, Device device, bool recorded) {
  std::optional<TransformerTrainStep> at;
  TransformerTrainStep* w = make_transformer_train_step(at, device, recorded);
  time_steps(state, device, [w] { return w->step(); });
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
