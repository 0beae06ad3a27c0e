// The dynamic request batcher: every caller gets the row of its own input (checked against a
// linear map computed here in double precision), batches really form and respect max_batch, a
// failure reaches only its batch, the queue bound, deadlines, shutdown draining, warm-up.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "kiln/engine/kiln.h"
#include "kiln/serve/serve.h"
#include "support/exact_inputs.h"
#include "support/expect_error.h"
#include "support/reference.h"

namespace kiln::test {
namespace {

using namespace std::chrono_literals;
using serve::Batcher;
using serve::BatcherOptions;

constexpr std::int64_t kIn = 6, kOut = 3;

// y = relu(x W + b) with W[i][j] = (i - 2j) / 8 and b[j] = j - 1: small integers over powers of
// two, exact in f32, so the expected rows below are exact too.
float weight(std::int64_t i, std::int64_t j) { return static_cast<float>(i - 2 * j) / 8.0f; }

struct LinearModel {
  Tensor w, b;
  explicit LinearModel(Device d = Device::cpu()) {
    std::vector<float> wv, bv;
    for (std::int64_t i = 0; i < kIn; ++i)
      for (std::int64_t j = 0; j < kOut; ++j) wv.push_back(weight(i, j));
    for (std::int64_t j = 0; j < kOut; ++j) bv.push_back(static_cast<float>(j - 1));
    w = from_vector(wv, {kIn, kOut}, d);
    b = from_vector(bv, {kOut}, d);
  }
  Tensor operator()(const Tensor& x) const { return relu(add(matmul(x, w), b)); }
};

std::vector<float> input_for(int id) { return test::exact_input(id, kIn); }

std::vector<float> expected_for(int id) {
  const std::vector<float> x = input_for(id);
  std::vector<float> y(kOut);
  for (std::int64_t j = 0; j < kOut; ++j) {
    double acc = j - 1;
    for (std::int64_t i = 0; i < kIn; ++i) acc += double(x[i]) * weight(i, j);
    y[j] = static_cast<float>(std::max(acc, 0.0));
  }
  return y;
}

// Blocks the batch function until released: lets a test fill the queue while a batch runs.
struct BatchGate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> entered{0};
  void wait() {
    entered.fetch_add(1);
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard lock(m);
      open = true;
    }
    cv.notify_all();
  }
  void until_entered(int n) const {
    while (entered.load() < n) std::this_thread::sleep_for(100us);
  }
};

// The model behind a gate: each batch waits until the test opens it.
serve::BatchFunction gated(const LinearModel& model, BatchGate& gate) {
  return [&model, &gate](const Tensor& x) {
    gate.wait();
    return model(x);
  };
}

TEST(Batcher, EveryCallerGetsItsOwnRowFromManyThreads) {
  LinearModel model;
  std::mutex sizes_mutex;
  std::vector<std::int64_t> sizes;
  Batcher batcher(
      [&](const Tensor& x) {
        {
          std::lock_guard lock(sizes_mutex);
          sizes.push_back(x.shape()[0]);
        }
        return model(x);
      },
      {kIn}, {.max_batch = 8, .max_wait = 2ms});
  constexpr int kThreads = 8, kPerThread = 60;
  std::atomic<int> wrong{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t)
    clients.emplace_back([&, t] {
      for (int k = 0; k < kPerThread; ++k) {
        const int id = t * kPerThread + k;
        if (batcher.submit(input_for(id)).get() != expected_for(id)) wrong.fetch_add(1);
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(wrong.load(), 0);
  const serve::BatcherStats s = batcher.stats();
  EXPECT_EQ(s.requests, std::uint64_t(kThreads * kPerThread));
  EXPECT_EQ(s.completed, std::uint64_t(kThreads * kPerThread));
  EXPECT_EQ(s.failed + s.expired + s.rejected_full, 0u);
  // Eight closed-loop clients and a 2 ms gathering window: batches hold several requests.
  EXPECT_GT(s.mean_batch(), 2.0) << s.batches << " batches";
  for (std::int64_t n : sizes) EXPECT_LE(n, 8);
}

// Callers sleep on a signal their batch shares, announced when the batch is answered
// (engine/future.h: CompletionSignal). Here a held batch, then 10 requests queued behind it and
// taken 4, 4 and 2 at a time: every caller wakes with its own answer. Bounded waits: a lost
// wake-up fails the test instead of hanging it.
TEST(Batcher, CallersQueuedBehindABatchWakeWithTheirOwnAnswers) {
  LinearModel model;
  BatchGate gate;
  Batcher batcher(gated(model, gate), {kIn}, {.max_batch = 4});
  std::vector<std::future<std::vector<float>>> answers;
  auto ask = [&](int id) {
    answers.push_back(std::async(std::launch::async, [&batcher, id] { return batcher.submit(input_for(id)).get(); }));
  };
  ask(0);
  gate.until_entered(1);  // the worker holds a batch of request 0
  for (int id = 1; id <= 10; ++id) ask(id);
  while (batcher.stats().requests < 11) std::this_thread::sleep_for(100us);
  gate.release();
  for (int id = 0; id <= 10; ++id) {
    ASSERT_EQ(answers[id].wait_for(5s), std::future_status::ready) << "request " << id << " was never woken";
    EXPECT_EQ(answers[id].get(), expected_for(id)) << id;
  }
  EXPECT_EQ(batcher.stats().completed, 11u);
}

TEST(Batcher, AFailureReachesOnlyTheRequestsOfItsBatch) {
  LinearModel model;
  std::atomic<int> calls{0};
  Batcher batcher(
      [&](const Tensor& x) {
        if (calls.fetch_add(1) == 1) throw Error("model", "the second batch fails");
        return model(x);
      },
      {kIn}, {.max_batch = 1});
  EXPECT_EQ(batcher.submit(input_for(0)).get(), expected_for(0));
  expect_error([&] { return batcher.submit(input_for(1)).get(); }, "model", {"second batch fails"});
  EXPECT_EQ(batcher.submit(input_for(2)).get(), expected_for(2));
  EXPECT_EQ(batcher.stats().failed, 1u);
  EXPECT_EQ(batcher.stats().completed, 2u);
}

TEST(Batcher, AnErrorOfAnOpInTheModelReachesTheFuture) {
  LinearModel model;
  const Tensor wrong = zeros({kIn + 1, kOut});
  Batcher batcher([&](const Tensor& x) { return matmul(x, wrong); }, {kIn});
  expect_error([&] { return batcher.submit(input_for(0)).get(); }, "matmul", {"[1, 6]", "[7, 3]"});
}

TEST(Batcher, ABatchFunctionReturningTheWrongRowCountFailsItsRequests) {
  Batcher batcher([](const Tensor& x) { return sum(x); }, {kIn});
  expect_error([&] { return batcher.submit(input_for(0)).get(); }, "serve::Batcher", {"one row per request"});
}

TEST(Batcher, WrongInputSizeIsAnErrorAtTheCallSite) {
  LinearModel model;
  Batcher batcher(model, {kIn});
  expect_error([&] { return batcher.submit(std::vector<float>(5)); }, "serve::Batcher::submit", {"5 values", "[6]", "6"});
}

TEST(Batcher, AFullQueueRefusesAtOnceAndLosesNothing) {
  LinearModel model;
  BatchGate gate;
  Batcher batcher(gated(model, gate), {kIn}, {.max_batch = 1, .max_queue = 2});
  auto running = batcher.submit(input_for(0));
  gate.until_entered(1);  // the worker holds request 0; the queue is empty
  auto q1 = batcher.submit(input_for(1));
  auto q2 = batcher.submit(input_for(2));
  EXPECT_THROW(batcher.submit(input_for(3)), serve::QueueFull);
  EXPECT_EQ(batcher.stats().rejected_full, 1u);
  gate.release();
  EXPECT_EQ(running.get(), expected_for(0));
  EXPECT_EQ(q1.get(), expected_for(1));
  EXPECT_EQ(q2.get(), expected_for(2));
}

TEST(Batcher, ARequestPastItsDeadlineFailsWithoutRunning) {
  LinearModel model;
  BatchGate gate;
  std::atomic<int> rows{0};
  Batcher batcher(
      [&](const Tensor& x) {
        gate.wait();
        rows.fetch_add(static_cast<int>(x.shape()[0]));
        return model(x);
      },
      {kIn}, {.max_batch = 4});
  auto first = batcher.submit(input_for(0));
  gate.until_entered(1);
  auto late = batcher.submit(input_for(1), serve::Clock::now() + 1ms);
  auto patient = batcher.submit(input_for(2), serve::Clock::now() + 60s);
  std::this_thread::sleep_for(5ms);
  gate.release();
  EXPECT_EQ(first.get(), expected_for(0));
  EXPECT_THROW(late.get(), serve::DeadlineExceeded);
  EXPECT_EQ(patient.get(), expected_for(2));
  EXPECT_EQ(rows.load(), 2);  // the expired request took no row
  EXPECT_EQ(batcher.stats().expired, 1u);
}

// Polls `f` until it is ready or `within` passed: a bounded wait, so that a policy that holds
// a request too long fails the test instead of hanging it.
template <class T>
bool ready_within(const Future<T>& f, std::chrono::milliseconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (!f.ready() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  return f.ready();
}

// The gathering window counts from a request's arrival, not from when the worker comes back to
// the queue: a request that waited out max_wait behind a running batch goes with the next batch
// at once. (Before, the worker gathered max_wait again after every batch, so a service busy
// enough to queue behind its batches paid max_wait on top of its queueing.)
TEST(Batcher, ARequestThatWaitedBehindABatchIsNotHeldForMaxWaitAgain) {
  LinearModel model;
  BatchGate gate;
  Batcher batcher(gated(model, gate), {kIn}, {.max_batch = 4, .max_wait = 1000ms});
  struct OpenAtExit {
    BatchGate& gate;
    ~OpenAtExit() { gate.release(); }
  } open_at_exit{gate};
  std::vector<Future<std::vector<float>>> full;
  for (int id = 0; id < 4; ++id) full.push_back(batcher.submit(input_for(id)));  // a full batch runs at once
  gate.until_entered(1);
  auto behind = batcher.submit(input_for(4));  // queued behind it, alone
  std::this_thread::sleep_for(1100ms);          // its max_wait passes while the batch is held
  gate.release();
  for (int id = 0; id < 4; ++id) EXPECT_EQ(full[id].get(), expected_for(id));
  // Answered without a second max_wait (1 s): half of it is a wide margin on a loaded machine.
  ASSERT_TRUE(ready_within(behind, 500ms)) << "the request was held for another max_wait";
  EXPECT_EQ(behind.get(), expected_for(4));
  const serve::BatcherStats s = batcher.stats();
  EXPECT_EQ(s.batches, 2u);
  EXPECT_EQ(s.batch_rows[4], 1u);
  EXPECT_EQ(s.batch_rows[1], 1u);
}

// A short batch is gathered no longer than its requests' deadlines allow: with max_wait an hour,
// a request due in 100 ms ends the gathering (and the batch runs, or the request fails with
// DeadlineExceeded at its deadline), instead of being held an hour and failed then.
TEST(Batcher, GatheringEndsByTheEarliestQueuedDeadline) {
  LinearModel model;
  Batcher batcher([&](const Tensor& x) { return model(x); }, {kIn}, {.max_batch = 8, .max_wait = std::chrono::hours(1)});
  auto patient = batcher.submit(input_for(0));  // the worker starts gathering for an hour
  std::this_thread::sleep_for(5ms);
  auto due = batcher.submit(input_for(1), serve::Clock::now() + 100ms);  // wakes it: a sooner end
  ASSERT_TRUE(ready_within(patient, 5000ms)) << "the batch was held past its request's deadline";
  ASSERT_TRUE(ready_within(due, 5000ms));
  EXPECT_EQ(patient.get(), expected_for(0));
  try {
    EXPECT_EQ(due.get(), expected_for(1));
  } catch (const serve::DeadlineExceeded&) {
    // Also within the policy: the gathering ended at the deadline, and the request was failed
    // then rather than run late.
  }
  const serve::BatcherStats s = batcher.stats();
  EXPECT_EQ(s.completed + s.expired, 2u);
  EXPECT_EQ(s.batches, 1u);  // both went in the one batch (or the due one expired from it)
}

// Two workers: while one runs a batch, the other runs the next. A worker that gathered a batch
// the other one took (both woken for the same requests) must wait again, not stop: before, it
// returned an empty batch, which means shutdown, and the service was left with one worker.
TEST(Batcher, TwoWorkersRunBatchesSideBySideAndNoneIsLost) {
  LinearModel model;
  BatchGate gate;
  Batcher batcher(gated(model, gate), {kIn}, {.max_batch = 2, .max_wait = 20ms, .workers = 2});
  struct OpenAtExit {  // a failed assertion must not leave a batch in the gate (shutdown waits for it)
    BatchGate& gate;
    ~OpenAtExit() { gate.release(); }
  } open_at_exit{gate};
  std::vector<Future<std::vector<float>>> answers;
  for (int round = 0; round < 3; ++round) {
    // A full batch at once: one worker takes it and holds it in the gate; the other may have
    // been woken for it too, and gathers in vain for max_wait.
    answers.push_back(batcher.submit(input_for(2 * round)));
    answers.push_back(batcher.submit(input_for(2 * round + 1)));
    gate.until_entered(2 * round + 1);
    std::this_thread::sleep_for(40ms);
    // The next request needs the other worker, the first being held.
    answers.push_back(batcher.submit(input_for(100 + round)));
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (gate.entered.load() < 2 * round + 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(100us);
    ASSERT_EQ(gate.entered.load(), 2 * round + 2) << "round " << round << ": no second worker took the request";
    gate.release();
    for (auto& a : answers) a.wait();
    std::lock_guard lock(gate.m);
    gate.open = false;
  }
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(answers[3 * round].get(), expected_for(2 * round));
    EXPECT_EQ(answers[3 * round + 1].get(), expected_for(2 * round + 1));
    EXPECT_EQ(answers[3 * round + 2].get(), expected_for(100 + round));
  }
}

TEST(Batcher, ShutdownAnswersEverythingQueuedThenRefuses) {
  LinearModel model;
  BatchGate gate;
  Batcher batcher(gated(model, gate), {kIn}, {.max_batch = 2});
  std::vector<Future<std::vector<float>>> answers;
  answers.push_back(batcher.submit(input_for(0)));
  gate.until_entered(1);
  for (int id = 1; id < 6; ++id) answers.push_back(batcher.submit(input_for(id)));
  std::thread stopper([&] { batcher.shutdown(); });
  std::this_thread::sleep_for(2ms);
  gate.release();
  stopper.join();  // returns once every queued request is answered
  for (int id = 0; id < 6; ++id) {
    ASSERT_TRUE(answers[id].ready()) << id;
    EXPECT_EQ(answers[id].get(), expected_for(id));
  }
  EXPECT_THROW(batcher.submit(input_for(7)), serve::ShuttingDown);
  batcher.shutdown();  // a second call is harmless
}

// After warm-up no request compiles anything: the plan cache only hits.
class WarmUp : public ::testing::TestWithParam<Device> {};

TEST_P(WarmUp, TheFirstRequestsCompileNothing) {
  const Device d = GetParam();
  LinearModel model(d);
  // A chain that fuses (matmul, bias, relu, scale): the CPU and Vulkan both build programs for it.
  auto forward = [&](const Tensor& x) { return mul(model(x), scalar(0.5, {DType::f32, d})); };
  Batcher batcher(forward, {kIn}, {.max_batch = 3, .device = d});
  const std::uint64_t before_warm_up = counters(d).plan_cache_misses;
  batcher.warm_up();
  EXPECT_GT(counters(d).plan_cache_misses, before_warm_up) << "the warm-up compiled nothing: this test cannot fail";
  const std::uint64_t misses = counters(d).plan_cache_misses;
  for (int id = 0; id < 3; ++id) {
    std::vector<float> want = expected_for(id);
    for (float& v : want) v *= 0.5f;
    EXPECT_EQ(batcher.submit(input_for(id)).get(), want);
  }
  EXPECT_EQ(counters(d).plan_cache_misses, misses);
}

INSTANTIATE_TEST_SUITE_P(Devices, WarmUp, ::testing::ValuesIn(test_devices()), device_param_name);

// On the CPU the warm-up also packs the model's weights for its small products (the second
// product of a weight packs it, devices/cpu/packed_weights.h): the requests after it pack
// nothing. Values are multiples of 1/8 with exact f32 sums, checked against a plain product.
TEST(WarmUpFunction, PacksAServedModelsWeightsOnTheCpu) {
  constexpr std::int64_t n = 256;
  std::vector<float> w_values(n * n);
  for (std::size_t q = 0; q < w_values.size(); ++q) w_values[q] = static_cast<float>(static_cast<int>(q * 7 % 19) - 9) / 8.0f;
  const Tensor w = from_vector(w_values, {n, n});
  Batcher batcher([&](const Tensor& x) { return matmul(x, w); }, {n}, {.max_batch = 4});
  const std::uint64_t before = counters().weights_packed;
  batcher.warm_up();
  EXPECT_EQ(counters().weights_packed, before + 1);
  for (int id = 0; id < 3; ++id) {
    std::vector<float> x(n);
    for (std::int64_t p = 0; p < n; ++p) x[static_cast<std::size_t>(p)] = static_cast<float>((p * 5 + id) % 17 - 8) / 8.0f;
    std::vector<float> want(n, 0.0f);
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < n; ++p) sum += double{x[static_cast<std::size_t>(p)]} * w_values[static_cast<std::size_t>(p * n + j)];
      want[static_cast<std::size_t>(j)] = static_cast<float>(sum);
    }
    EXPECT_EQ(batcher.submit(x).get(), want) << id;
  }
  EXPECT_EQ(counters().weights_packed, before + 1);
}

TEST(WarmUpFunction, PropagatesAShapeErrorOfTheModel) {
  const Tensor w = zeros({4, 2});
  expect_error([&] { serve::warm_up([&](const Tensor& x) { return matmul(x, w); }, {kIn}, {1}); return 0; }, "matmul",
               {"[1, 6]", "[4, 2]"});
}

}  // namespace
}  // namespace kiln::test
