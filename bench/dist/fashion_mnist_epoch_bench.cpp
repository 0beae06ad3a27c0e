// dist_fashion_mnist_epoch: one epoch of the main job's CNN (examples/fashion_mnist_model.h) on
// Fashion-MNIST's 60,000 images, data-parallel over the processes kiln-launch started: each rank
// its shard of the epoch with batches of 128 / N, the gradients averaged in buckets during
// backward (dist::GradientReducer), Adam at lr 1e-3. Rank 0 reports the epoch's time. With
// --split-cpus every run uses the same cores (N processes with 1/N of them each), so the scaling
// efficiency at N processes is time(1) / time(N): 1.0 when data parallelism costs nothing over one
// process on all the cores. Compare with bench/ fashion_mnist_epoch (one process, no process
// group) on the same machine for the cost of the group itself at N = 1.
//
// dist_fashion_mnist_epoch_no_exchange is the probe of that bound: the same processes, shards,
// batches and cores, each rank stepping on its own gradients (no all-reduce, no bucket copies).
// Its t1 / tN is what these cores give this workload split N ways with no communication at all;
// the gap between the two efficiencies is what the gradient exchange costs.
//
//   for n in 1 2 4; do ./build/kiln-launch -n $n --split-cpus -- ./build/bench/kiln_dist_fashion_mnist_bench; done
//
// KILN_BENCH_BUCKET_BYTES sets the reducer's bucket_bytes (PyTorch's bucket_cap_mb; default 25
// MiB, one bucket after the first for this model): 1048576 puts fc1's weight in a bucket of its
// own, reduced while backward computes the convolutions.
#include <cstdlib>

#include <benchmark/benchmark.h>
#include <kiln/data.h>
#include <kiln/dist.h>

#include "rank_zero_reports.h"
#include <kiln/optim.h>

#include <cstdio>
#include <filesystem>

#include "examples/fashion_mnist_model.h"

namespace {

using namespace kiln;

dist::ProcessGroup* group = nullptr;

// exchange: average the gradients over the ranks (the workload) or keep each rank's own (the probe).
void run_epoch(benchmark::State& state, bool exchange) {
  if (!std::filesystem::exists(data::kDebianFashionMnist)) {
    state.SkipWithError("Fashion-MNIST is missing: apt-get install dataset-fashion-mnist (./dev does)");
    return;
  }
  manual_seed(0);
  const int n = group->world_size();
  const data::Normalize normalize{{kFashionMnistMean}, {kFashionMnistStd}};
  const auto shard =
      dist::shard(data::map(data::fashion_mnist(data::Split::train), normalize), group->rank(), n, {.seed = 0});
  const data::DataLoader<> loader(shard, {.batch_size = 128 / n, .workers = 1});
  SmallCNN model = dist::replicate(*group, SmallCNN(Device::cpu()));
  dist::GradientReducerOptions bucket_options;
  if (const char* bytes = std::getenv("KILN_BENCH_BUCKET_BYTES"))
    bucket_options.bucket_bytes = static_cast<std::size_t>(std::strtoull(bytes, nullptr, 10));
  dist::GradientReducer reducer(*group, model, bucket_options);
  optim::Adam opt({.lr = 1e-3});
  auto step = [&](const data::Batch& batch) {
    Tensor loss = nn::cross_entropy(model(batch.inputs), batch.labels);
    model = opt.step(std::move(model), exchange ? reducer.backward(model, loss) : backward(loss));
    return loss;
  };
  int warm = 0;
  for (const data::Batch& batch : loader.epoch(0)) {
    if (warm++ == 3) break;
    step(batch).to_vector<float>().get();
  }
  std::int64_t epoch = 1;
  group->barrier();
  for (auto _ : state) {
    shard->set_epoch(epoch);
    Tensor loss;
    for (const data::Batch& batch : loader.epoch(epoch)) loss = step(batch);
    loss.to_vector<float>().get();
    group->barrier();  // the epoch ends when the slowest rank's does
    ++epoch;
  }
  state.counters["processes"] = n;
  if (exchange) {  // rank 0's view of where the exchange went, per step (warm-up steps included)
    const dist::GradientReducerTimes t = reducer.times();
    const auto ms_per_step = [&](std::uint64_t ns) {
      return t.steps ? 1e-6 * static_cast<double>(ns) / static_cast<double>(t.steps) : 0.0;
    };
    state.counters["read_ms_per_step"] = ms_per_step(t.read_ns);
    state.counters["all_reduce_ms_per_step"] = ms_per_step(t.all_reduce_ns);
    state.counters["wait_ms_per_step"] = ms_per_step(t.wait_ns);
  }
  state.counters["images_per_s"] = benchmark::Counter(60000.0, benchmark::Counter::kIsIterationInvariantRate);
}
void dist_fashion_mnist_epoch(benchmark::State& state) { run_epoch(state, true); }
void dist_fashion_mnist_epoch_no_exchange(benchmark::State& state) { run_epoch(state, false); }
BENCHMARK(dist_fashion_mnist_epoch)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(dist_fashion_mnist_epoch_no_exchange)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) { return kiln::bench::run_benchmarks_reporting_on_rank_zero(argc, argv, group); }
