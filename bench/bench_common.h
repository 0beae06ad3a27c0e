// bench/: Google Benchmark suites for the workloads of shared/WORKLOADS.md. Every benchmark is
// named by its workload id and records the work one iteration does (bytes, flops or ops) as a
// counter; bench/report.py turns the median of the repetitions into the contract's figure.
// Timing is wall-clock (UseRealTime): the work runs on the scheduler's threads, not the caller's.
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>

#include "kiln/engine/kiln.h"

namespace kiln::bench {

inline constexpr std::int64_t kBigN = 16'777'216;  // 64 MiB of f32

// Blocks until every op submitted to `device` has run, so that nothing timed is left pending.
inline void wait(Device device) { sync(device).get(); }

// The numerator of the figure, per iteration; report.py picks the unit from the counter's name.
inline void set_bytes(benchmark::State& state, double bytes) { state.counters["bytes_per_iter"] = bytes; }
inline void set_flops(benchmark::State& state, double flops) { state.counters["flops_per_iter"] = flops; }
inline void set_ops(benchmark::State& state, double ops) { state.counters["ops_per_iter"] = ops; }

// The scheduler's counters over the timed loop, per iteration: kernels launched (fusion shows as
// fewer), how many of them were fused and how many fused kernels had to be compiled (0 once the
// cache is warm), outputs that reused an input's buffer, scheduler batches, device waits.
class CounterDelta {
 public:
  explicit CounterDelta(Device device) : device_(device), before_(counters(device)) {}
  void report(benchmark::State& state) const {
    const EngineCounters after = counters(device_);
    const double n = static_cast<double>(state.iterations());
    auto per_iter = [&](std::uint64_t EngineCounters::*field) {
      return static_cast<double>(after.*field - before_.*field) / n;
    };
    state.counters["kernels_per_iter"] = per_iter(&EngineCounters::kernels_launched);
    state.counters["fused_per_iter"] = per_iter(&EngineCounters::fused_kernels);
    state.counters["compiles_per_iter"] = per_iter(&EngineCounters::plan_cache_misses);
    state.counters["inplace_per_iter"] = per_iter(&EngineCounters::inplace_reuses);
    state.counters["batches_per_iter"] = per_iter(&EngineCounters::batches);
    // Full waits for a GPU (reads, syncs): the round trips a workload cannot run ahead of.
    if (const double waits = per_iter(&EngineCounters::device_waits); waits > 0) state.counters["waits_per_iter"] = waits;
    // The device's own clock (GPU timestamps), where it has one: the kernels' time without the
    // host's share of the round trip.
    if (const double busy = per_iter(&EngineCounters::device_busy_ns); busy > 0) state.counters["device_us_per_iter"] = busy / 1e3;
  }

 private:
  Device device_;
  EngineCounters before_;
};

// Turns fusion off for a scope: the "<id>/unfused" variants show what fusion buys.
class FusionOff {
 public:
  FusionOff() : was_enabled_(fusion_enabled()) { set_fusion(false); }
  ~FusionOff() { set_fusion(was_enabled_); }
  FusionOff(const FusionOff&) = delete;
  FusionOff& operator=(const FusionOff&) = delete;

 private:
  bool was_enabled_;
};

// How long a workload runs: `repetitions` runs of at least `min_time` seconds each (or of a fixed
// number of iterations, for the slowest matmuls); the figure is their median. Each benchmark body
// also runs its work once untimed first. bench/torch_twin.py applies the same numbers.
struct Policy {
  double min_time = 0.1;
  int repetitions = 5;
  int iterations = 0;  // > 0: this many iterations per repetition instead of min_time
};

inline benchmark::internal::Benchmark* apply(benchmark::internal::Benchmark* b, Policy p) {
  b->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(p.repetitions)->ReportAggregatesOnly(true);
  return p.iterations > 0 ? b->Iterations(p.iterations) : b->MinTime(p.min_time);
}

// Each file registers its workloads, for tensors on `device`.
void register_elementwise(Device device);
void register_reduce(Device device);
void register_matmul(Device device);
void register_autograd(Device device);
void register_nn(Device device);  // conv2d, conv2d_backward, resnet_block
void register_train(Device device);  // mlp_train_step, transformer_train_step
void register_serve(Device device);  // mlp_infer_b1, concurrent_infer
void register_fashion_mnist(Device device);  // fashion_mnist_epoch
void register_serve_load(Device device);     // serve_load (examples/serve over HTTP), CPU only
void register_serve_http(Device device);     // serve_http (64 connections, beside the batcher in-process), CPU only
void register_onnx(Device device);           // onnx_resnet18, onnx_encoder (imported ONNX files)

}  // namespace kiln::bench
