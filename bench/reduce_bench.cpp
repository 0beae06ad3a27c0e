// Reduction workloads: a sum of 16M floats (read bandwidth), a row-wise softmax, and the sum of
// squares of 16M floats written as two ops (mul, then sum: fused, the squares are never stored).
#include "bench/bench_common.h"

namespace kiln::bench {
namespace {

void sum_all(benchmark::State& state, Device device) {
  Generator gen(3);
  const Tensor x = randn(Shape{kBigN}, gen, {DType::f32, device});
  sum(x).item<float>().get();
  CounterDelta delta(device);
  for (auto _ : state) benchmark::DoNotOptimize(sum(x).item<float>().get());
  delta.report(state);
  set_bytes(state, 4.0 * kBigN);
}

void softmax_rows(benchmark::State& state, Device device) {
  constexpr std::int64_t kRows = 4096, kCols = 1024;
  Generator gen(4);
  const Tensor x = randn(Shape{kRows, kCols}, gen, {DType::f32, device});
  {
    Tensor warm = softmax(x, -1);
    wait(device);
  }
  CounterDelta delta(device);
  for (auto _ : state) {
    Tensor y = softmax(x, -1);
    wait(device);
  }
  delta.report(state);
  set_bytes(state, 8.0 * kRows * kCols);
}

// softmax(x * 0.125 + mask) as attention writes it: the scale and the mask fuse into the
// softmax as its prologue. Bytes: x read and y written (the [1024] mask stays in cache).
// `dtype` f16: the same ops on f16 values (each rounded to f16, as PyTorch's CUDA kernels do; the
// softmax accumulates in f32), 4 bytes per element.
void attention_softmax(benchmark::State& state, Device device, DType dtype) {
  constexpr std::int64_t kRows = 4096, kCols = 1024;
  Generator gen(6);
  const Tensor x = cast(randn(Shape{kRows, kCols}, gen, {DType::f32, device}), dtype);
  const Tensor mask = cast(randn(Shape{kCols}, gen, {DType::f32, device}), dtype);
  auto step = [&] { return softmax(add(mul(x, 0.125), mask), -1); };
  {
    Tensor warm = step();
    wait(device);
  }
  CounterDelta delta(device);
  for (auto _ : state) {
    Tensor y = step();
    wait(device);
  }
  delta.report(state);
  set_bytes(state, 2.0 * static_cast<double>(dtype_size(dtype)) * kRows * kCols);
}

void sum_squares(benchmark::State& state, Device device) {
  Generator gen(5);
  const Tensor x = randn(Shape{kBigN}, gen, {DType::f32, device});
  sum(mul(x, x)).item<float>().get();
  CounterDelta delta(device);
  for (auto _ : state) benchmark::DoNotOptimize(sum(mul(x, x)).item<float>().get());
  delta.report(state);
  set_bytes(state, 4.0 * kBigN);
}

}  // namespace

void register_reduce(Device device) {
  apply(benchmark::RegisterBenchmark("softmax_rows", softmax_rows, device), {});
  apply(benchmark::RegisterBenchmark("sum_all", sum_all, device), {});
  apply(benchmark::RegisterBenchmark("sum_squares", sum_squares, device), {});
  apply(benchmark::RegisterBenchmark("attention_softmax", attention_softmax, device, DType::f32), {});
  if (device.kind == DeviceKind::vulkan)  // 16-bit floats live on GPUs
    apply(benchmark::RegisterBenchmark("attention_softmax_f16", attention_softmax, device, DType::f16), {});
}

}  // namespace kiln::bench
