// Future<T>: the result of reading a tensor or syncing a device. get() waits and rethrows the
// kiln::Error of the op that failed upstream, if any. Before it sleeps, a waiting thread runs
// its device's pending work itself when no scheduler thread is at it already: the result then
// needs no hand-over between threads, which is most of the latency of a small step.
#pragma once
#include <chrono>
#include <future>
#include <thread>

#include "ops/nap.h"
#include "ops/trace.h"

namespace kiln {

// Runs the pending work of the stream a future waits on (see Stream::help); set by the engine.
struct FutureHelper {
  void (*run)(void*) = nullptr;
  void* stream = nullptr;
  bool nap = false;  // a GPU's work: nap between polls before sleeping (ops/nap.h)
  // Poll before sleeping (below). Off where many waiters would poll for results that other
  // threads compute on the same cores: serve::Batcher's clients (8 on 2 cores spent their
  // polls yielding to each other; asleep, the batches came out full: 7.9 requests, not 7.0).
  bool poll = true;
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
    if (!f_.valid() || !helper_.poll) return;
    const auto start = std::chrono::steady_clock::now();
    while (!ready() && std::chrono::steady_clock::now() < start + kPollWindow) std::this_thread::yield();
    if (helper_.nap) nap_until([this] { return ready(); }, kNap, start + kNapWindow);
  }

  std::future<T> f_;
  FutureHelper helper_;
};

}  // namespace kiln
