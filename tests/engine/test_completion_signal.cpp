// CompletionSignal (engine/future.h): one announce wakes every thread waiting on it, and a
// waiter whose condition turns true before an announce never sleeps through it. Waits are bounded
// here (std::async + wait_for), so a lost wake-up fails the test instead of hanging it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "kiln/engine/future.h"

namespace kiln {
namespace {

using namespace std::chrono_literals;

TEST(CompletionSignal, OneAnnounceWakesEveryWaiter) {
  CompletionSignal signal;
  constexpr int kWaiters = 6;
  std::vector<std::atomic<bool>> done(kWaiters);
  std::atomic<int> waiting{0};
  std::vector<std::future<void>> waiters;
  for (int i = 0; i < kWaiters; ++i)
    waiters.push_back(std::async(std::launch::async, [&, i] {
      waiting.fetch_add(1);
      signal.wait_until([&] { return done[i].load(); });
    }));
  while (waiting.load() < kWaiters) std::this_thread::sleep_for(100us);
  std::this_thread::sleep_for(5ms);  // most are asleep by now
  for (auto& d : done) d.store(true);
  signal.announce();
  for (int i = 0; i < kWaiters; ++i) EXPECT_EQ(waiters[i].wait_for(5s), std::future_status::ready) << i;
}

TEST(CompletionSignal, NoWakeUpIsLostBetweenTheCheckAndTheSleep) {
  CompletionSignal signal;
  constexpr int kRounds = 3000;
  std::atomic<int> completed{0};  // rounds whose result is out
  std::atomic<int> seen{0};       // rounds the waiter has seen
  auto waiter = std::async(std::launch::async, [&] {
    for (int r = 1; r <= kRounds; ++r) {
      signal.wait_until([&] { return completed.load() >= r; });
      seen.store(r);
    }
  });
  for (int r = 1; r <= kRounds; ++r) {
    completed.store(r);
    signal.announce();
    // The next round only after the waiter took this one, so each round races one check
    // against one announce.
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (seen.load() < r && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    ASSERT_EQ(seen.load(), r) << "the waiter slept through announce " << r;
  }
  EXPECT_EQ(waiter.wait_for(5s), std::future_status::ready);
}

}  // namespace
}  // namespace kiln
