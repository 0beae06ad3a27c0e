// Many threads submitting to one device, tensors moved between threads: results equal a
// single-threaded run (run this suite under ThreadSanitizer too).
#include <gtest/gtest.h>

#include <thread>

#include "kiln/engine/kiln.h"

namespace kiln {
namespace {

// A small workload that touches elementwise, reduce, matmul and layout ops.
Tensor workload(int seed) {
  Generator gen(static_cast<std::uint64_t>(seed));
  Tensor a = rand(Shape{16, 32}, gen);
  Tensor b = rand(Shape{32, 8}, gen);
  Tensor c = matmul(a, b);
  c = relu(sub(std::move(c), 4.0));
  Tensor s = softmax(transpose(c, 0, 1), -1);
  return add(sum(s, {1}), mean(c, {0}));
}

TEST(Concurrency, EightThreadsMatchASingleThread) {
  constexpr int kThreads = 8, kRounds = 20;
  std::vector<std::vector<float>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t) expected[t] = workload(t).to_vector<float>().get();

  std::vector<std::vector<float>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &got] {
      Tensor r;
      for (int i = 0; i < kRounds; ++i) r = workload(t);
      got[t] = r.to_vector<float>().get();
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[t], expected[t]) << "thread " << t;
}

TEST(Concurrency, TensorsMoveBetweenThreads) {
  // Thread A starts a chain, thread B continues it with the handed-over tensor, the main thread
  // reads it: sequence order must respect the hand-over.
  for (int round = 0; round < 50; ++round) {
    Tensor x;
    std::thread a([&x] { x = add(full(Shape{256}, 1.0), 2.0); });
    a.join();
    Tensor y;
    std::thread b([&x, &y] { y = mul(std::move(x), 3.0); });
    b.join();
    const std::vector<float> v = y.to_vector<float>().get();
    ASSERT_EQ(v[0], 9.0f);
    ASSERT_EQ(v[255], 9.0f);
  }
}

TEST(Concurrency, SyncWaitsForOtherThreadsWork) {
  std::vector<Tensor> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &results] {
      Tensor x = full(Shape{1000}, static_cast<double>(t));
      for (int i = 0; i < 100; ++i) x = add(std::move(x), 1.0);
      results[t] = std::move(x);
    });
  for (auto& th : threads) th.join();
  Device::cpu().sync().get();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(results[t].to_vector<float>().get()[999], 100.0f + t);
}

}  // namespace
}  // namespace kiln
