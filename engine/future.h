// Future<T>: the result of reading a tensor or syncing a device. get() waits and rethrows the
// kiln::Error of the op that failed upstream, if any. Before it sleeps, a waiting thread runs
// its device's pending work itself when no scheduler thread is at it already: the result then
// needs no hand-over between threads, which is most of the latency of a small step. A Promise
// is its write side (a read's completion, a batcher's answer).
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "kiln/base/nap.h"
#include "kiln/base/trace.h"

namespace kiln {

// What a producer that completes many futures at once bumps after completing them, so that one
// wake-up reaches all their waiters (serve::Batcher: the callers of a batch). Such waiters sleep
// here, not inside the std::future: a std::promise wakes its waiter as it is set, and on a busy
// machine each woken caller took the setting thread's core before the next one was set (a batch
// of 8 answers took 77 us to hand out on 2 cores, one caller waking every 9-10 us).
class CompletionSignal {
 public:
  // After completing the futures that wait here: wakes their waiters (one system call for all).
  void announce() {
    word_.fetch_add(1, std::memory_order_release);
    word_.notify_all();
  }
  // Returns once done() holds; done() must hold before the announce() that follows its change.
  template <class Done> void wait_until(const Done& done) const {
    for (;;) {
      const std::uint32_t seen = word_.load(std::memory_order_acquire);
      if (done()) return;
      word_.wait(seen, std::memory_order_acquire);
    }
  }

 private:
  std::atomic<std::uint32_t> word_{0};
};

// Runs the pending work of the stream a future waits on (see Stream::help); set by the engine.
struct FutureHelper {
  void (*run)(void*) = nullptr;
  void* stream = nullptr;
  bool nap = false;  // a GPU's work: nap between polls before sleeping (base/nap.h)
  // Poll before sleeping (below). Off where many waiters would poll for results that other
  // threads compute on the same cores: serve::Batcher's clients (8 on 2 cores spent their
  // polls yielding to each other; asleep, the batches came out full: 7.9 requests, not 7.0).
  bool poll = true;
  // Where the producer announces completion (above); a waiter sleeps on it, not in the future.
  std::shared_ptr<const CompletionSignal> signal;
};

namespace detail {

// What a Future reads and its Promise writes, once: a value or an error. In place of the
// std::promise/std::future pair: setting a std::promise goes through std::call_once, which in
// glibc makes a futex system call whether or not anyone waits (1-1.5 us of a 30 us request on a
// virtual machine, where system calls are dear); here a setter makes one only for a thread
// asleep in wait().
template <class T> class FutureState {
 public:
  template <class... V> void set_value(V&&... v) {
    claim();
    if constexpr (!std::is_void_v<T>) value_.emplace(std::forward<V>(v)...);
    publish();
  }
  void set_exception(std::exception_ptr e) {
    claim();
    error_ = std::move(e);
    publish();
  }
  bool satisfied() const { return status_.load(std::memory_order_acquire) != kEmpty; }
  bool ready() const { return status_.load(std::memory_order_acquire) == kReady; }
  void wait() const {
    for (std::uint32_t s; (s = status_.load(std::memory_order_acquire)) != kReady;)
      status_.wait(s, std::memory_order_acquire);
  }
  // Waits, then moves the value out or rethrows the error (once: the Future lets go after).
  T take() {
    wait();
    if (error_) std::rethrow_exception(error_);
    if constexpr (!std::is_void_v<T>) return std::move(*value_);
  }

 private:
  static constexpr std::uint32_t kEmpty = 0, kWriting = 1, kReady = 2;
  void claim() {
    std::uint32_t expected = kEmpty;
    if (!status_.compare_exchange_strong(expected, kWriting, std::memory_order_acquire))
      throw std::future_error(std::future_errc::promise_already_satisfied);
  }
  void publish() {
    status_.store(kReady, std::memory_order_release);
    status_.notify_all();  // a system call only when a thread sleeps in wait()
  }
  std::atomic<std::uint32_t> status_{kEmpty};
  std::optional<std::conditional_t<std::is_void_v<T>, char, T>> value_;
  std::exception_ptr error_;
};

}  // namespace detail

// The write side of a Future (the completion of a read, a batcher's answer). Move-only; one
// destroyed unset breaks its future with std::future_errc::broken_promise, as std::promise does.
template <class T> class Promise {
 public:
  Promise() : state_(std::make_shared<detail::FutureState<T>>()) {}
  Promise(Promise&&) noexcept = default;
  Promise& operator=(Promise&& other) noexcept {
    if (this != &other) {
      abandon();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  ~Promise() { abandon(); }
  template <class... V> void set_value(V&&... v) { state_->set_value(std::forward<V>(v)...); }
  void set_exception(std::exception_ptr e) { state_->set_exception(std::move(e)); }
  // The state a Future reads (engine-side: Future's constructor takes it).
  const std::shared_ptr<detail::FutureState<T>>& state() const { return state_; }

 private:
  void abandon() {
    if (state_ && !state_->satisfied())
      state_->set_exception(std::make_exception_ptr(std::future_error(std::future_errc::broken_promise)));
  }
  std::shared_ptr<detail::FutureState<T>> state_;
};

template <class T> class Future {
 public:
  Future() = default;
  explicit Future(std::shared_ptr<detail::FutureState<T>> state, FutureHelper helper = {})
      : f_(std::move(state)), helper_(std::move(helper)) {}
  // Move-only, as std::future: get() hands the value out once.
  Future(Future&&) noexcept = default;
  Future& operator=(Future&&) noexcept = default;
  // Waits for the value and returns it, or rethrows the failure; once (then valid() is false).
  T get() {
    if (!f_) throw std::future_error(std::future_errc::no_state);
    settle();
    const std::shared_ptr<detail::FutureState<T>> state = std::move(f_);
    return state->take();
  }
  void wait() const {
    if (!f_) throw std::future_error(std::future_errc::no_state);
    settle();
    f_->wait();
  }
  bool ready() const { return f_ && f_->ready(); }
  bool valid() const { return f_ != nullptr; }

 private:
  void help() const {
    if (helper_.run && !ready()) helper_.run(helper_.stream);
  }
  // Helps, then, when a scheduler thread had the work already, polls for a short while before
  // sleeping: that thread usually finishes within microseconds (a small step, a GPU fence it
  // polls), and waking a sleeping thread costs tens of microseconds on a busy or virtual
  // machine. Yielding while polling leaves the core to any thread that has work. Waiting on a
  // GPU, it then naps between polls for up to 20 ms (a sleeping waiter woke 90-140 us late
  // after a 3.6 ms matmul on an H200); not where the work runs on the host's own cores (the
  // CPU, lavapipe), where the wake-ups would take time from the threads doing it.
  void settle() const {
    const trace::Span span("wait", "future");
    help();
    if (helper_.signal) helper_.signal->wait_until([this] { return ready(); });
    if (!helper_.poll) return;
    const auto start = std::chrono::steady_clock::now();
    while (!ready() && std::chrono::steady_clock::now() < start + kPollWindow) std::this_thread::yield();
    if (helper_.nap) nap_until([this] { return ready(); }, kNap, start + kNapWindow);
  }

  std::shared_ptr<detail::FutureState<T>> f_;
  FutureHelper helper_;
};

}  // namespace kiln
