// Overlap (set_overlap): on the CPU, a batch that holds several threads' work runs its kernels
// as tasks, each after the kernels whose outputs it reads. The results must equal a run with
// overlap off bit for bit, a failure must reach exactly the values computed from it, and work
// that one thread hands to another must wait for the kernel that made it.
#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <vector>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/kiln.h"

namespace kiln {
namespace {

class OverlapScope {
 public:
  explicit OverlapScope(bool on) : before_(overlap_enabled()) { set_overlap(on); }
  ~OverlapScope() { set_overlap(before_); }

 private:
  bool before_;
};

// A chain of products, elementwise ops and reductions long enough to run for a while.
Tensor chain(int seed) {
  Generator gen(static_cast<std::uint64_t>(seed));
  Tensor w = mul(randn(Shape{96, 96}, gen), 0.1);
  Tensor x = randn(Shape{64, 96}, gen);
  for (int i = 0; i < 6; ++i) x = tanh(add(matmul(std::move(x), w), 0.01 * i));
  return add(sum(x, {1}), mean(softmax(x, -1), {1}));
}

// Each of `threads` threads submits chain(seed + t) and nothing reads until all have submitted:
// their ops reach the scheduler in one batch.
std::vector<Tensor> submitted_together(int threads, int seed) {
  std::vector<Tensor> out(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&out, t, seed] { out[t] = chain(seed + t); });
  for (auto& th : pool) th.join();
  return out;
}

std::vector<std::vector<float>> values(const std::vector<Tensor>& ts) {
  std::vector<std::vector<float>> v;
  for (const Tensor& t : ts) v.push_back(t.to_vector<float>().get());
  return v;
}

TEST(Overlap, ThreadsWorkSideBySideAndMatchTheOrderedRunBitForBit) {
  std::vector<std::vector<float>> ordered;
  {
    OverlapScope off(false);
    ordered = values(submitted_together(4, 11));
  }
  OverlapScope on(true);
  const std::uint64_t before = counters().overlapped_kernels;
  const std::vector<std::vector<float>> overlapped = values(submitted_together(4, 11));
  EXPECT_EQ(overlapped, ordered);
  EXPECT_GT(counters().overlapped_kernels, before) << "the four threads' kernels were not overlapped";
}

TEST(Overlap, OneThreadsWorkRunsInOrder) {
  OverlapScope on(true);
  const std::uint64_t before = counters().overlapped_kernels;
  Tensor r = chain(3);
  (void)r.to_vector<float>().get();
  EXPECT_EQ(counters().overlapped_kernels, before);
}

TEST(Overlap, AValueHandedToAnotherThreadWaitsForItsKernel) {
  // Thread A makes x and hands it to B, then goes on with work of its own; B's ops on x run
  // after the kernel that makes x, though both threads' work is in one batch.
  auto run = [] {
    std::promise<Tensor> handed;
    Tensor from_b, from_a;
    std::thread a([&] {
      Tensor x = chain(21);
      handed.set_value(x);
      from_a = mul(chain(22), std::move(x));
    });
    std::thread b([&] {
      Tensor x = handed.get_future().get();
      from_b = exp(neg(abs(add(matmul(reshape(x, {64, 1}), reshape(x, {1, 64})), 1.0))));
    });
    a.join();
    b.join();
    return values({from_a, from_b});
  };
  std::vector<std::vector<float>> ordered;
  {
    OverlapScope off(false);
    ordered = run();
  }
  OverlapScope on(true);
  const std::uint64_t before = counters().overlapped_kernels;
  for (int round = 0; round < 10; ++round) EXPECT_EQ(run(), ordered) << "round " << round;
  EXPECT_GT(counters().overlapped_kernels, before);
}

TEST(Overlap, AFailedKernelFailsOnlyTheValuesComputedFromIt) {
  OverlapScope on(true);
  const std::uint64_t before = counters().overlapped_kernels;
  Tensor bad, bad_later, good;
  std::thread a([&] {
    // one_hot checks its indices in the kernel: the failure happens in a task.
    Tensor hot = one_hot(full(Shape{8}, 7.0, TensorOptions{DType::i64}), 4);
    bad = cast(hot, DType::f32);
    bad_later = matmul(add(bad, 1.0), ones(Shape{4, 4}));
  });
  std::thread b([&] { good = chain(5); });
  a.join();
  b.join();
  const std::vector<float> got = good.to_vector<float>().get();  // runs both threads' work
  EXPECT_GT(counters().overlapped_kernels, before);
  std::vector<float> expected;
  {
    OverlapScope off(false);
    expected = chain(5).to_vector<float>().get();
  }
  EXPECT_EQ(got, expected);
  for (const Tensor* t : {&bad, &bad_later}) {
    try {
      (void)t->to_vector<float>().get();
      FAIL() << "expected the read to fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.op(), "one_hot");
    }
  }
}

TEST(Overlap, PerThreadGradientsEqualTheOrderedRun) {
  auto grads = [] {
    Generator gen(9);
    const Tensor w1 = mul(randn(Shape{32, 48}, gen), 0.2), w2 = mul(randn(Shape{48, 4}, gen), 0.2);
    const Tensor x = randn(Shape{16, 32}, gen);
    std::vector<std::vector<float>> g(2 * 2);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&, t] {
        Tensor a = require_grad(w1), b = require_grad(w2);
        Tensor shard = narrow(x, 0, 8 * t, 8);
        Tensor loss = mean(mul(gelu(matmul(matmul(shard, a), b)), 0.5));
        Gradients gr = backward(loss);
        g[2 * t] = gr.get(a).to_vector<float>().get();
        g[2 * t + 1] = gr.get(b).to_vector<float>().get();
      });
    for (auto& th : threads) th.join();
    return g;
  };
  std::vector<std::vector<float>> ordered;
  {
    OverlapScope off(false);
    ordered = grads();
  }
  OverlapScope on(true);
  EXPECT_EQ(grads(), ordered);
}

}  // namespace
}  // namespace kiln
