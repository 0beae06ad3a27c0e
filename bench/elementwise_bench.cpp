// Elementwise workloads: GELU written as five ops (what fusion is for; also run with fusion off)
// and the library's own, ten in-place adds on a uniquely owned tensor, and a chain of 64 ops on
// 64 elements (the cost of submitting and scheduling).
#include <cmath>
#include <vector>

#include "bench/bench_common.h"

namespace kiln::bench {
namespace {

constexpr int kSmallOps = 64;

// y = x * (erf(x / sqrt(2)) + 1) / 2 as a user writes it: five separate ops.
Tensor gelu_by_hand(const Tensor& x) { return div(mul(x, add(erf(div(x, std::sqrt(2.0))), 1.0)), 2.0); }
Tensor gelu_library(const Tensor& x) { return gelu(x); }

// 4 bytes read and 4 written per element (2 and 2 for f16), whatever the op does in between.
void unary_map(benchmark::State& state, Device device, Tensor (*fn)(const Tensor&), DType dtype) {
  Generator gen(1);
  const Tensor x = cast(randn(Shape{kBigN}, gen, {DType::f32, device}), dtype);
  {
    Tensor warm = fn(x);
    wait(device);
  }
  CounterDelta delta(device);
  for (auto _ : state) {
    Tensor y = fn(x);
    wait(device);  // y is still alive here: its whole chain must have run
  }
  delta.report(state);
  set_bytes(state, 2.0 * static_cast<double>(dtype_size(dtype)) * kBigN);
}

void gelu_unfused(benchmark::State& state, Device device) {
  FusionOff off;
  unary_map(state, device, gelu_by_hand, DType::f32);
}

void add_inplace(benchmark::State& state, Device device) {
  Tensor x = zeros(Shape{kBigN}, {DType::f32, device});
  auto ten_adds = [&] {
    for (int i = 0; i < 10; ++i) x = add(std::move(x), 1.0);
    wait(device);
  };
  ten_adds();  // also retires the drops of earlier benchmarks: in use now is x alone
  reset_peak_memory(device);
  CounterDelta delta(device);
  for (auto _ : state) ten_adds();
  delta.report(state);
  set_bytes(state, 10 * 8.0 * kBigN);
  // One tensor (64 MiB) when every add reuses x's buffer.
  state.counters["peak_mib"] = static_cast<double>(memory_stats(device).peak_in_use) / (1 << 20);
}

// 64 dependent scalar ops on 64 elements, then a read: measures submission and scheduling.
void small_ops(benchmark::State& state, Device device) {
  Generator gen(2);
  const Tensor x = randn(Shape{64}, gen, {DType::f32, device});
  auto chain = [&] {
    Tensor y = x;
    for (int i = 0; i < kSmallOps / 4; ++i) {
      y = add(std::move(y), 0.5);
      y = mul(std::move(y), 1.001);
      y = sub(std::move(y), 0.25);
      y = div(std::move(y), 1.001);
    }
    return y.to_vector<float>().get();
  };
  chain();
  CounterDelta delta(device);
  for (auto _ : state) {
    std::vector<float> values = chain();
    benchmark::DoNotOptimize(values.data());
  }
  delta.report(state);
  set_ops(state, kSmallOps);
}

}  // namespace

void register_elementwise(Device device) {
  apply(benchmark::RegisterBenchmark("gelu_fused", unary_map, device, gelu_by_hand, DType::f32), {});
  apply(benchmark::RegisterBenchmark("gelu_fused/unfused", gelu_unfused, device), {});
  apply(benchmark::RegisterBenchmark("gelu_native", unary_map, device, gelu_library, DType::f32), {});
  // The same five ops on f16 values (each rounded to f16, as PyTorch's CUDA kernels do): a GPU
  // workload, where 16-bit floats exist.
  if (device.kind == DeviceKind::vulkan)
    apply(benchmark::RegisterBenchmark("gelu_fused_f16", unary_map, device, gelu_by_hand, DType::f16), {});
  apply(benchmark::RegisterBenchmark("add_inplace", add_inplace, device), {});
  apply(benchmark::RegisterBenchmark("small_ops", small_ops, device), {})->Unit(benchmark::kMicrosecond);
}

}  // namespace kiln::bench
