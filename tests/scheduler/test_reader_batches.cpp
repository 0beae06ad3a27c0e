// Small batches run by the reading thread (Stream::submit, Flush::reader): on the CPU a read or
// sync runs the work pending before it on its own thread when the device's last batch was small,
// and wakes the scheduler otherwise. Values are exact (small integers in float).
#include <gtest/gtest.h>

#include <thread>

#include "kiln/engine/kiln.h"

namespace kiln {
namespace {

using std::chrono::microseconds;

// A budget of a second: "the last batch was small" must not depend on how fast this machine (or
// a sanitizer's build) ran it. The default comes back after each test.
class ReaderBatches : public ::testing::Test {
 protected:
  void SetUp() override { set_reader_batch_budget(std::chrono::seconds(1)); }
  void TearDown() override { set_reader_batch_budget(microseconds(500)); }

  static std::uint64_t run_by_readers() { return counters(Device::cpu()).batches_run_by_readers; }

  // 2x + 1 of [1, 2, 3], read; the future as to_vector returned it.
  static Future<std::vector<float>> small_request() {
    return add(mul(from_vector(std::vector<float>{1, 2, 3}, {3}), 2.0), 1.0).to_vector<float>();
  }
};

TEST_F(ReaderBatches, ASmallReadRunsBeforeToVectorReturns) {
  for (int i = 0; i < 3; ++i) small_request().get();  // the device's last batch is now this one
  const std::uint64_t before = run_by_readers();
  Future<std::vector<float>> f = small_request();
  EXPECT_TRUE(f.ready()) << "the reading thread should have run its batch before to_vector returned";
  EXPECT_EQ(run_by_readers(), before + 1);
  EXPECT_EQ(f.get(), (std::vector<float>{3, 5, 7}));
}

TEST_F(ReaderBatches, ASmallSyncRunsBeforeItReturns) {
  for (int i = 0; i < 3; ++i) small_request().get();
  Tensor y = add(from_vector(std::vector<float>{1, 2}, {2}), 1.0);
  const std::uint64_t before = run_by_readers();
  Future<void> done = Device::cpu().sync();
  EXPECT_TRUE(done.ready());
  EXPECT_EQ(run_by_readers(), before + 1);
  done.get();
  EXPECT_EQ(y.to_vector<float>().get(), (std::vector<float>{2, 3}));
}

TEST_F(ReaderBatches, ABudgetOfZeroWakesTheScheduler) {
  set_reader_batch_budget(microseconds(0));
  for (int i = 0; i < 3; ++i) small_request().get();
  const std::uint64_t before = run_by_readers();
  EXPECT_EQ(small_request().get(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(run_by_readers(), before);
}

TEST_F(ReaderBatches, AfterABatchOverTheBudgetTheSchedulerRunsIt) {
  set_reader_batch_budget(microseconds(1));
  Generator gen(3);
  (void)matmul(rand(Shape{256, 256}, gen), rand(Shape{256, 256}, gen)).to_vector<float>().get();  // well over 1 us
  const std::uint64_t before = run_by_readers();
  EXPECT_EQ(small_request().get(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(run_by_readers(), before);
}

TEST_F(ReaderBatches, ManyMoreOpsThanTheLastBatchGoToTheScheduler) {
  for (int i = 0; i < 3; ++i) small_request().get();
  const std::uint64_t before = run_by_readers();
  Tensor x = from_vector(std::vector<float>{0, 1}, {2});
  for (int i = 0; i < 100; ++i) x = add(std::move(x), 1.0);  // under the flush threshold: nothing runs yet
  EXPECT_EQ(x.to_vector<float>().get(), (std::vector<float>{100, 101}));
  EXPECT_EQ(run_by_readers(), before);
}

// A failure inside the batch still reaches the future, not the call that submitted the read.
TEST_F(ReaderBatches, AKernelFailureReachesTheFutureNotToVector) {
  Device::cpu().sync().get();
  release_cached_memory();
  struct Limit {
    explicit Limit(std::size_t bytes) { set_memory_limit(Device::cpu(), memory_stats().bytes_reserved + bytes); }
    ~Limit() { set_memory_limit(Device::cpu(), 0); }
  } limit(1 << 16);
  small_request().get();  // the last batch before the read: a small one
  const std::uint64_t before = run_by_readers();
  Future<std::vector<float>> f = zeros(Shape{1 << 16}).to_vector<float>();  // 256 KiB over a 64 KiB cap
  EXPECT_EQ(run_by_readers(), before + 1);
  EXPECT_THROW(f.get(), Error);
}

// Readers on several threads at once, each running batches that may hold the others' ops, or
// finding the step taken and leaving it to the holder: every result arrives and is right.
TEST_F(ReaderBatches, ManyThreadsReadingAtOnceGetTheirOwnResults) {
  constexpr int kThreads = 6, kRounds = 200;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &wrong] {
      for (int i = 0; i < kRounds; ++i) {
        const float v = static_cast<float>(t * 1000 + i);
        const std::vector<float> got = mul(from_vector(std::vector<float>{v, 1}, {2}), 2.0).to_vector<float>().get();
        wrong[t] += got != std::vector<float>{2 * v, 2};
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace kiln
