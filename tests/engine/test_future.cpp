// Promise and Future (engine/future.h), the pair every read and sync hands back: a value or an
// error set on one thread reaches get() on another, whether the getter is asleep or not yet
// waiting; a promise dropped unset breaks its future; each side is used once. Waits are bounded
// (std::async + wait_for), so a lost wake-up fails the test instead of hanging it.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kiln/engine/future.h"

namespace kiln {
namespace {

using namespace std::chrono_literals;

std::future_errc error_code(const std::future_error& e) { return static_cast<std::future_errc>(e.code().value()); }

TEST(Future, AValueSetOnAnotherThreadWakesASleepingGetter) {
  Promise<std::vector<float>> promise;
  Future<std::vector<float>> future(promise.state());
  EXPECT_FALSE(future.ready());
  // A Future, as a std::future, belongs to one thread at a time: from here on, the getter's.
  auto getter = std::async(std::launch::async, [&] { return future.get(); });
  std::this_thread::sleep_for(5ms);  // the getter is asleep by now
  promise.set_value(std::vector<float>{1.5f, -2.0f});
  ASSERT_EQ(getter.wait_for(5s), std::future_status::ready) << "the getter slept through set_value";
  EXPECT_EQ(getter.get(), (std::vector<float>{1.5f, -2.0f}));
}

TEST(Future, AValueSetBeforeGetIsThereAtOnce) {
  Promise<int> promise;
  Future<int> future(promise.state());
  promise.set_value(7);
  EXPECT_TRUE(future.ready());
  EXPECT_EQ(future.get(), 7);
  EXPECT_FALSE(future.valid());
  EXPECT_FALSE(future.ready());
}

TEST(Future, AnErrorIsRethrownByGet) {
  Promise<int> promise;
  Future<int> future(promise.state());
  promise.set_exception(std::make_exception_ptr(std::runtime_error("matmul: shapes [2, 3] and [4, 5]")));
  EXPECT_TRUE(future.ready());
  try {
    future.get();
    FAIL() << "get() returned a value for a failed promise";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "matmul: shapes [2, 3] and [4, 5]");
  }
}

TEST(Future, APromiseDroppedUnsetBreaksItsFuture) {
  std::optional<Future<std::vector<float>>> future;
  {
    Promise<std::vector<float>> promise;
    future.emplace(promise.state());
    Promise<std::vector<float>> moved = std::move(promise);  // the moved-from one breaks nothing
    EXPECT_FALSE(future->ready());
  }
  ASSERT_TRUE(future->ready());
  try {
    future->get();
    FAIL() << "get() returned a value for a promise nobody set";
  } catch (const std::future_error& e) {
    EXPECT_EQ(error_code(e), std::future_errc::broken_promise);
  }
}

TEST(Future, EachSideIsUsedOnce) {
  Promise<int> promise;
  Future<int> future(promise.state());
  promise.set_value(1);
  try {
    promise.set_value(2);
    FAIL() << "a second set_value was accepted";
  } catch (const std::future_error& e) {
    EXPECT_EQ(error_code(e), std::future_errc::promise_already_satisfied);
  }
  EXPECT_THROW(promise.set_exception(std::make_exception_ptr(std::runtime_error("late"))), std::future_error);
  EXPECT_EQ(future.get(), 1);
  try {
    future.get();
    FAIL() << "a second get() returned a value";
  } catch (const std::future_error& e) {
    EXPECT_EQ(error_code(e), std::future_errc::no_state);
  }
}

TEST(Future, VoidFuturesCompleteAndFail) {
  Promise<void> done, failed;
  Future<void> a(done.state()), b(failed.state());
  auto waiter = std::async(std::launch::async, [&] { a.wait(); });
  done.set_value();
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);
  EXPECT_NO_THROW(a.get());
  failed.set_exception(std::make_exception_ptr(std::runtime_error("sync failed")));
  EXPECT_THROW(b.get(), std::runtime_error);
}

// Each round races one set_value against one getter about to sleep: a wake-up lost between the
// getter's check and its sleep would leave the round unfinished.
TEST(Future, NoWakeUpIsLostBetweenTheCheckAndTheSleep) {
  constexpr int kRounds = 1000;
  for (int r = 0; r < kRounds; ++r) {
    Promise<int> promise;
    Future<int> future(promise.state());
    auto getter = std::async(std::launch::async, [&] { return future.get(); });
    promise.set_value(r);
    ASSERT_EQ(getter.wait_for(5s), std::future_status::ready)
        << "round " << r << ": the getter slept through set_value";
    ASSERT_EQ(getter.get(), r);
  }
}

}  // namespace
}  // namespace kiln
