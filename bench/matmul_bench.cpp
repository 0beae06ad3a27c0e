// matmul_N: C = A @ B for square f32 matrices, beside OpenBLAS's cblas_sgemm called directly on
// the same shapes in the same process (the target is kiln within 5% of it). report.py folds each
// "matmul_N/openblas" run into matmul_N's line as the "openblas" field. On a GPU the same ids
// time the device (no OpenBLAS twin), plus matmul_4096_f16 and matmul_4096_bf16 (and _4000_, a
// size that is no whole number of the tensor-core kernels' tiles, and matmul_batched_*, 16
// products of 2000 x 1000 @ 1000 x 2000), and linear_relu_4096_f16 (relu(A @ B + bias) in f16): inputs cast on
// the device before the timed loop, f32 accumulation, a result of the inputs' dtype.
#include <cblas.h>

#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/bench_common.h"

namespace kiln::bench {
namespace {

double matmul_flops(int n) { return 2.0 * n * n * n; }

// n x n @ n x n, or with batches > 0: batches x (n x k @ k x n). `layer`: relu(A @ B + bias),
// what a linear layer computes (the bias and relu fuse into the product as its epilogue).
void kiln_matmul(benchmark::State& state, Device device, int n, DType dtype, int batches, int k, bool layer) {
  Generator gen(5);
  if (k == 0) k = n;
  const Shape sa = batches ? Shape{batches, n, k} : Shape{n, k}, sb = batches ? Shape{batches, k, n} : Shape{k, n};
  Tensor a = randn(sa, gen, {DType::f32, device});
  Tensor b = randn(sb, gen, {DType::f32, device});
  Tensor bias = randn(Shape{n}, gen, {DType::f32, device});
  if (dtype != DType::f32) {
    a = cast(std::move(a), dtype);
    b = cast(std::move(b), dtype);
    bias = cast(std::move(bias), dtype);
  }
  auto step = [&] { return layer ? relu(add(matmul(a, b), bias)) : matmul(a, b); };
  {
    Tensor warm = step();
    wait(device);
  }
  CounterDelta delta(device);
  for (auto _ : state) {
    Tensor c = step();
    wait(device);
  }
  delta.report(state);
  set_flops(state, 2.0 * (batches ? batches : 1) * n * static_cast<double>(k) * n);
}

void openblas_matmul(benchmark::State& state, int n) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size());
  for (float& v : a) v = normal(rng);
  for (float& v : b) v = normal(rng);
  // OpenBLAS on its own threads, as a program calling it directly would use it; kiln runs it on
  // one thread a call and tiles products itself, so the count goes back to 1 afterwards.
  openblas_set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  struct Restore {
    ~Restore() { openblas_set_num_threads(1); }
  } restore;
  auto gemm = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  };
  gemm();
  for (auto _ : state) {
    gemm();
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, matmul_flops(n));
}

}  // namespace

void register_matmul(Device device) {
  // 2N^3 flops: 0.27 G at 512, 137 G at 4096 (about 0.7 s on 2 cores), hence fewer runs there.
  // A GPU takes milliseconds at most: every size gets the min-time policy (torch_twin.py's
  // GPU_MATMUL_POLICY).
  const bool cpu = device == Device::cpu();
  const Policy gpu_policy{0.2, 5};
  const std::pair<int, Policy> sizes[] = {{512, {}}, {1024, {0.2, 5}}, {2048, {0.2, 3}}, {4096, {0.0, 3, 1}}};
  for (const auto& [n, policy] : sizes) {
    const std::string id = "matmul_" + std::to_string(n);
    apply(benchmark::RegisterBenchmark(id.c_str(), kiln_matmul, device, n, DType::f32, 0, 0, false),
          cpu ? policy : gpu_policy);
    if (cpu) apply(benchmark::RegisterBenchmark((id + "/openblas").c_str(), openblas_matmul, n), policy);
  }
  if (cpu) return;
  apply(benchmark::RegisterBenchmark("matmul_4096_f16", kiln_matmul, device, 4096, DType::f16, 0, 0, false), gpu_policy);
  apply(benchmark::RegisterBenchmark("matmul_4096_bf16", kiln_matmul, device, 4096, DType::bf16, 0, 0, false), gpu_policy);
  apply(benchmark::RegisterBenchmark("linear_relu_4096_f16", kiln_matmul, device, 4096, DType::f16, 0, 0, true),
        gpu_policy);
  // Not whole tiles of the workgroup-scope kernel (4000 = 31.25 x 128): its padded copies.
  apply(benchmark::RegisterBenchmark("matmul_4000_f16", kiln_matmul, device, 4000, DType::f16, 0, 0, false), gpu_policy);
  apply(benchmark::RegisterBenchmark("matmul_4000_bf16", kiln_matmul, device, 4000, DType::bf16, 0, 0, false), gpu_policy);
  // Batched and no whole tiles: 16 x (2000 x 1000 @ 1000 x 2000), every matrix padded.
  apply(benchmark::RegisterBenchmark("matmul_batched_f16", kiln_matmul, device, 2000, DType::f16, 16, 1000, false),
        gpu_policy);
  apply(benchmark::RegisterBenchmark("matmul_batched_bf16", kiln_matmul, device, 2000, DType::bf16, 16, 1000, false),
        gpu_policy);
}

}  // namespace kiln::bench
