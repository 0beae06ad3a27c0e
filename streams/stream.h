// streams/: the asynchronous stream of one device. Any number of threads submit op messages
// through a lock-free queue (moodycamel::ConcurrentQueue); each message gets a sequence number
// at submission, and the scheduler runs a stream's messages in that order. Because a thread can
// only use a tensor after the op that makes it was submitted, sequence order is a valid
// dependency order even when tensors move between threads.
#pragma once
#include <atomic>
#include <concurrentqueue/concurrentqueue.h>
#include <cstdint>
#include <functional>
#include <vector>

#include "ops/ir.h"

namespace kiln {

class Stream {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // The scheduler installs this before the first submission: called when work arrives on an
  // idle stream.
  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }
  // And this: runs the stream's pending work on the calling thread, unless a scheduler thread is
  // running it (then it returns at once). A thread about to wait for a result calls it.
  void set_help(std::function<void()> help) { help_ = std::move(help); }
  void help() {
    if (help_) help_();
  }

  // Lock-free; returns the message's sequence number. `urgent` wakes the scheduler (a read, a
  // sync, every op when fusion is off); other messages wait for the next wake-up, so a chain
  // of ops reaches the fusion planner in one batch and submitting costs no wake-up.
  std::uint64_t submit(OpIr&& op, bool urgent);
  // Wakes the scheduler unless a wake-up is already pending.
  void wake();

  // Scheduler side: clear the idle flag, then take what is queued (any order; sort by seq).
  void begin_drain() {
    armed_.store(false, std::memory_order_seq_cst);
    since_wake_.store(0, std::memory_order_relaxed);
  }
  std::size_t drain(std::vector<OpIr>& into);

  std::uint64_t submitted() const { return next_seq_.load(std::memory_order_relaxed); }

 private:
  moodycamel::ConcurrentQueue<OpIr> queue_;
  std::atomic<std::uint64_t> next_seq_{0};
  std::atomic<bool> armed_{false};
  std::atomic<std::size_t> since_wake_{0};  // messages since the last wake-up (a hint)
  std::function<void()> wake_;
  std::function<void()> help_;
};

}  // namespace kiln
