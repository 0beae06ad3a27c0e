// dist_allreduce: the all-reduce of a process group on the loopback, sums of 1 MiB to 256 MiB of
// f32, as data-parallel training reduces its gradient buckets. Started by kiln-launch, every rank
// runs the same benchmarks with the same fixed iteration counts (collectives match by order);
// rank 0 reports. bus_GB/s is the algorithm bandwidth times 2 (N - 1) / N (the bytes each rank
// sends and receives in a ring, as nccl-tests and Gloo's own benchmark count it), so that figures
// of 2 and 4 processes compare. The twin is PyTorch's Gloo all-reduce on the same sizes
// (bench/dist/allreduce_twin.py), Gloo's own benchmark not being shipped by Debian.
//
//   ./build/kiln-launch -n 2 -- ./build/bench/kiln_dist_allreduce_bench
//   ./build/kiln-launch -n 4 -- ./build/bench/kiln_dist_allreduce_bench
//   /usr/bin/python3 bench/dist/allreduce_twin.py --processes 2
#include <benchmark/benchmark.h>
#include <kiln/dist.h>

#include "rank_zero_reports.h"

#include <vector>

namespace {

using namespace kiln;

dist::ProcessGroup* group = nullptr;

void set_counters(benchmark::State& state, std::size_t bytes) {
  const double n = group->world_size();
  const double per_iter = static_cast<double>(bytes);
  state.counters["alg_GB"] = benchmark::Counter(per_iter / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bus_GB"] =
      benchmark::Counter(per_iter * 2 * (n - 1) / n / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["processes"] = n;
}

// The collective alone, on host memory: what a gradient bucket costs once its values are read.
void dist_allreduce(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0)) << 20 >> 2;  // MiB of f32
  std::vector<float> data(count, 1.0f);
  const auto timeout = group->timeout();
  auto reduce = [&] {
    group
        ->submit([&](dist::Collective& c) {
          c.all_reduce(data.data(), count, dist::Element::f32, dist::ReduceOp::sum, timeout);
        })
        .get();
  };
  reduce();  // warm: the pairs' buffers
  group->barrier();
  for (auto _ : state) reduce();
  set_counters(state, count * sizeof(float));
}

// ProcessGroup::all_reduce of a CPU tensor: the shape check, the copy out and the new tensor too.
void dist_allreduce_tensor(benchmark::State& state) {
  const std::int64_t count = state.range(0) << 20 >> 2;
  const Tensor t = full(Shape{count}, 1.0);
  group->all_reduce(t).to_vector<float>().get();
  group->barrier();
  for (auto _ : state) group->all_reduce(t).to_vector<float>().get();
  set_counters(state, static_cast<std::size_t>(count) * sizeof(float));
}

// Fixed iteration counts: every rank must run each benchmark the same number of times.
void sizes(benchmark::internal::Benchmark* b) {
  for (int mib : {1, 4, 16, 64, 256}) b->Arg(mib);
  b->Iterations(10)->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(dist_allreduce)->Apply(sizes);
BENCHMARK(dist_allreduce_tensor)->Arg(16)->Iterations(10)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) { return kiln::bench::run_benchmarks_reporting_on_rank_zero(argc, argv, group); }
