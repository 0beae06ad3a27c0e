// kiln's asynchronous API in one page: ops return handles at once, values come back through
// futures, and handing a tensor over with std::move lets the next op reuse its buffer.
#include <chrono>
#include <cstdio>

#include <kiln/core.h>

using namespace kiln;
using Clock = std::chrono::steady_clock;

static double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

int main() {
  Generator gen(42);

  // 1. Submit a small model: every call returns at once, the scheduler runs it behind us.
  auto t0 = Clock::now();
  Tensor x = randn(Shape{256, 784}, gen);
  Tensor w1 = mul(randn(Shape{784, 512}, gen), 0.05);
  Tensor w2 = mul(randn(Shape{512, 10}, gen), 0.05);
  Tensor h = relu(matmul(x, w1));
  Tensor logits = matmul(std::move(h), w2);
  Tensor probs = softmax(logits, -1);
  Tensor predicted = argmax(probs, 1);
  const double submit_ms = ms_since(t0);

  // 2. Read results: each read is a future; get() waits only for what this value needs.
  Future<std::vector<std::int64_t>> classes = predicted.to_vector<std::int64_t>();
  Future<float> total = sum(probs).item<float>();
  std::vector<std::int64_t> c = classes.get();
  const double ready_ms = ms_since(t0);
  std::printf("MLP 784-512-10 on a batch of 256 (cpu)\n");
  std::printf("  submitted 9 ops in %.3f ms; results ready after %.3f ms\n", submit_ms, ready_ms);
  std::printf("  predicted classes of the first 8 rows: ");
  for (int i = 0; i < 8; ++i) std::printf("%lld ", static_cast<long long>(c[i]));
  std::printf("\n  sum of all probabilities: %.3f (expected 256)\n", total.get());

  // 3. In-place reuse: x is handed over ten times, so its buffer is reused ten times.
  reset_peak_memory();
  const auto reuses = counters().inplace_reuses;
  auto t1 = Clock::now();
  Tensor y = zeros(Shape{1 << 22});
  for (int i = 0; i < 10; ++i) y = add(std::move(y), 1.0);
  const float first = y.to_vector<float>().get()[0];
  std::printf("10 chained adds on a 16 MiB tensor: value %.0f, %.3f ms, peak %.1f MiB, %llu buffers reused in place\n",
              first, ms_since(t1), memory_stats().peak_in_use / 1048576.0,
              static_cast<unsigned long long>(counters().inplace_reuses - reuses));

  // 4. Errors: bad shapes are reported at the call site, with the op and the shapes.
  try {
    (void)add(ones(Shape{2, 3}), ones(Shape{4}));
  } catch (const Error& e) {
    std::printf("a bad call is reported at once: %s\n", e.what());
  }

  const EngineCounters k = counters();
  std::printf("engine: %llu ops submitted, %llu kernels launched, %llu batches\n",
              static_cast<unsigned long long>(k.ops_submitted), static_cast<unsigned long long>(k.kernels_launched),
              static_cast<unsigned long long>(k.batches));
  return 0;
}
