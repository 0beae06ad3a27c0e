// Flow control: each device stream bounds the work submitted and not yet run (ops, and bytes of
// their outputs). A submitter past the bound waits until the device catches up (or gets an
// error, by setting); reads, syncs and drops are never held back; threads and bounds never
// deadlock. The expected values are plain arithmetic (x + 1 applied n times), not kiln's.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "kiln/engine/kiln.h"
#include "support/expect_error.h"

namespace kiln {
namespace {

// Each test sets its own bound and batching, and puts the process's settings back after. Fusion
// is on in all of them: with it, ops wait for a read, a sync or the flush threshold, so work
// stays in flight until flow control (or the test) asks for it to run.
class FlowControl : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = flow_control();
    saved_threshold_ = flush_threshold();
    saved_fusion_ = fusion_enabled();
    set_fusion(true);
    set_flush_threshold(1 << 20);  // nothing runs before a read, a sync or a held-back submitter
  }
  void TearDown() override {
    sync(Device::cpu()).get();
    set_flow_control(saved_);
    set_flush_threshold(saved_threshold_);
    set_fusion(saved_fusion_);
  }

 private:
  FlowControlOptions saved_;
  std::size_t saved_threshold_ = 0;
  bool saved_fusion_ = true;
};

std::vector<float> filled(std::size_t n, float v) { return std::vector<float>(n, v); }

TEST_F(FlowControl, OpsInFlightStayWithinTheBoundAndTheSubmitterIsReleased) {
  set_flow_control({.max_ops = 64, .max_bytes = 0});
  const EngineCounters before = counters();
  Tensor x = zeros(Shape{1024});
  std::uint64_t most_in_flight = 0;
  for (int i = 0; i < 2000; ++i) {
    x = std::move(x) + 1.0;
    most_in_flight = std::max(most_in_flight, counters().in_flight_ops);
  }
  // Unbounded, all 2000 would wait here for the read (the flush threshold is out of reach).
  EXPECT_LE(most_in_flight, 64u);
  const EngineCounters after = counters();
  EXPECT_GT(after.held_back, before.held_back);
  EXPECT_GT(after.held_back_ns, before.held_back_ns);
  EXPECT_EQ(x.to_vector<float>().get(), filled(1024, 2000.0f));
  EXPECT_EQ(counters().in_flight_ops, 0u);
  EXPECT_EQ(counters().in_flight_bytes, 0u);
}

TEST_F(FlowControl, BytesInFlightStayWithinTheBound) {
  constexpr std::uint64_t kBound = 64 << 10;  // four outputs of 16 KiB
  set_flow_control({.max_ops = 0, .max_bytes = kBound});
  Tensor x = zeros(Shape{4096});
  std::uint64_t most_bytes = 0;
  for (int i = 0; i < 300; ++i) {
    x = std::move(x) * 1.0 + 1.0;
    most_bytes = std::max(most_bytes, counters().in_flight_bytes);
  }
  EXPECT_LE(most_bytes, kBound);
  EXPECT_GT(most_bytes, 0u);
  EXPECT_EQ(x.to_vector<float>().get(), filled(4096, 300.0f));
}

// An op larger than the whole bound still runs, alone: the bound never deadlocks on one message.
TEST_F(FlowControl, AnOpLargerThanTheBoundRunsAlone) {
  set_flow_control({.max_ops = 0, .max_bytes = 1024});
  Tensor x = full(Shape{1 << 16}, 2.0f);  // 256 KiB
  for (int i = 0; i < 5; ++i) x = std::move(x) + 1.0;
  EXPECT_EQ(x.to_vector<float>().get(), filled(1 << 16, 7.0f));
}

TEST_F(FlowControl, ErrorWhenFullNamesTheOpAndLeavesTheInputsUsable) {
  set_flow_control({.max_ops = 4, .max_bytes = 0, .when_full = WhenFull::error});
  Tensor x = zeros(Shape{8});  // 1 op in flight
  for (int i = 0; i < 3; ++i) x = std::move(x) + 1.0;  // 4
  test::expect_error([&] { return exp(x); }, "exp", {"cpu stream", "4 ops", "not yet run", "set_flow_control"});
  // Nothing of the refused op happened: x is still there. A read is never refused, and runs
  // what is pending; after it, there is room again.
  EXPECT_EQ(x.to_vector<float>().get(), filled(8, 3.0f));
  x = std::move(x) + 1.0;
  EXPECT_EQ(x.to_vector<float>().get(), filled(8, 4.0f));
}

TEST_F(FlowControl, ReadsSyncsAndDropsAreNeverHeldBack) {
  set_flow_control({.max_ops = 3, .max_bytes = 0, .when_full = WhenFull::error});
  Tensor a = full(Shape{4}, 1.0f), b = full(Shape{4}, 2.0f), c = full(Shape{4}, 3.0f);  // at the bound
  const EngineCounters before = counters();
  Future<std::vector<float>> ra = a.to_vector<float>();  // read: not refused (error mode)
  Future<void> done = sync(Device::cpu());                // sync: not refused
  { Tensor gone = std::move(c); }                         // drop: not refused
  EXPECT_EQ(ra.get(), filled(4, 1.0f));
  done.get();
  EXPECT_EQ(b.to_vector<float>().get(), filled(4, 2.0f));
  EXPECT_EQ(counters().held_back, before.held_back);
}

// A read waits only for the work before it: products submitted after the read are not run on
// its account (the reading thread would otherwise run them before returning to its result).
TEST_F(FlowControl, AReadDoesNotWaitForWorkSubmittedAfterIt) {
  Tensor x = full(Shape{16}, 5.0f);
  Future<std::vector<float>> early = (x * 2.0).to_vector<float>();
  const Tensor m = full(Shape{256, 256}, 0.5f);
  std::vector<Tensor> late;
  for (int i = 0; i < 16; ++i) late.push_back(matmul(m, m));  // submitted after the read
  EXPECT_EQ(early.get(), filled(16, 10.0f));
  // The products are still pending: nothing has asked for them (the threshold is out of reach).
  EXPECT_GE(counters().in_flight_ops, 16u);
  EXPECT_EQ(late.back().to_vector<float>().get(), filled(256 * 256, 64.0f));
  EXPECT_EQ(counters().in_flight_ops, 0u);
}

// The same across threads: one thread kept at a tight bound by a stream of heavy products, the
// other reading its own small results all along; every read returns with its value.
TEST_F(FlowControl, ReadsGoThroughWhileAnotherThreadIsHeldBack) {
  set_flow_control({.max_ops = 8, .max_bytes = 0});
  std::atomic<bool> stop{false};
  std::thread heavy([&] {
    const Tensor m = full(Shape{256, 256}, 0.001f);
    while (!stop.load()) {
      std::vector<Tensor> products;
      for (int i = 0; i < 32; ++i) products.push_back(matmul(m, m));
    }
  });
  for (int i = 0; i < 50; ++i) {
    Tensor y = full(Shape{4}, static_cast<float>(i)) + 1.0;
    EXPECT_EQ(y.to_vector<float>().get(), filled(4, static_cast<float>(i + 1)));
  }
  stop.store(true);
  heavy.join();
}

TEST_F(FlowControl, ManyThreadsAtATightBoundNeitherDeadlockNorLoseWork) {
  set_flow_control({.max_ops = 16, .max_bytes = 32 << 10});
  constexpr int kThreads = 4, kSteps = 600;
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &results] {
      Tensor x = full(Shape{1024}, static_cast<float>(t));
      for (int i = 0; i < kSteps; ++i) {
        x = std::move(x) + 1.0;
        if (i % 100 == 99) (void)x.to_vector<float>().get();  // reads between the held-back ops
      }
      results[t] = x.to_vector<float>().get();
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(results[t], filled(1024, static_cast<float>(t + kSteps))) << t;
}

TEST_F(FlowControl, SettingsRoundTrip) {
  set_flow_control({.max_ops = 7, .max_bytes = 9, .when_full = WhenFull::error});
  const FlowControlOptions got = flow_control();
  EXPECT_EQ(got.max_ops, 7u);
  EXPECT_EQ(got.max_bytes, 9u);
  EXPECT_EQ(got.when_full, WhenFull::error);
}

}  // namespace
}  // namespace kiln
