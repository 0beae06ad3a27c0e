// Future<T>: the result of reading a tensor or syncing a device. get() waits and rethrows the
// kiln::Error of the op that failed upstream, if any. Before it sleeps, a waiting thread runs
// its device's pending work itself when no scheduler thread is at it already: the result then
// needs no hand-over between threads, which is most of the latency of a small step.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <thread>

#include "ops/nap.h"
#include "ops/trace.h"

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
  bool nap = false;  // a GPU's work: nap between polls before sleeping (ops/nap.h)
  // Poll before sleeping (below). Off where many waiters would poll for results that other
  // threads compute on the same cores: serve::Batcher's clients (8 on 2 cores spent their
  // polls yielding to each other; asleep, the batches came out full: 7.9 requests, not 7.0).
  bool poll = true;
  // Where the producer announces completion (above); a waiter sleeps on it, not in the future.
  std::shared_ptr<const CompletionSignal> signal;
};

template <class T> class Future {
 public:
  Future() = default;
  explicit Future(std::future<T> f, FutureHelper helper = {}) : f_(std::move(f)), helper_(helper) {}
  T get() {
    settle();
    return f_.get();
  }
  void wait() const {
    settle();
    f_.wait();
  }
  bool ready() const { return f_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  bool valid() const { return f_.valid(); }

 private:
  void help() const {
    if (helper_.run && f_.valid() && !ready()) helper_.run(helper_.stream);
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
    if (helper_.signal && f_.valid()) helper_.signal->wait_until([this] { return ready(); });
    if (!f_.valid() || !helper_.poll) return;
    const auto start = std::chrono::steady_clock::now();
    while (!ready() && std::chrono::steady_clock::now() < start + kPollWindow) std::this_thread::yield();
    if (helper_.nap) nap_until([this] { return ready(); }, kNap, start + kNapWindow);
  }

  std::future<T> f_;
  FutureHelper helper_;
};

}  // namespace kiln
