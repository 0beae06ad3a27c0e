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

#include "kiln/ops/ir.h"
#include "kiln/streams/flow_control.h"

namespace kiln {

// What a message asks of the scheduler when it is submitted.
enum class Flush {
  later,   // nothing: it waits for the next wake-up, so a chain of ops reaches the planner whole
           // (with fusion off, or past the flush threshold, the stream wakes the scheduler itself)
  reader,  // a read or a sync: a thread is about to wait for it (see Stream::submit)
};

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

  // Lock-free; returns the message's sequence number. Flush::later messages wait for the next
  // wake-up, so a chain of ops reaches the fusion planner in one batch and submitting costs no
  // wake-up. Flush::reader on a stream that lets readers run small batches (below), when the
  // stream's last batch took at most the budget and about as many messages wait now: the
  // submitting thread runs the pending work itself, as a waiting thread does (help()), before
  // submit returns, and no scheduler thread is woken. Otherwise it wakes the scheduler.
  std::uint64_t submit(OpIr&& op, Flush flush);
  // Flow control (streams/flow_control.h): a thread about to submit work whose outputs take
  // `bytes` calls this first, on its own thread, before anything of the op has happened; past
  // the stream's bound it waits (asking the scheduler to run what is pending) or throws.
  void admit(std::uint64_t bytes, const char* op) {
    flow_.admit(bytes, op, [this] { request_flush(); });
  }
  FlowControl& flow() { return flow_; }
  const FlowControl& flow() const { return flow_; }
  // Asks the scheduler to run the pending ops now, without waiting for a read or the threshold.
  void request_flush() {
    flush_requested_.store(true, std::memory_order_seq_cst);
    wake();
  }
  // Scheduler side: whether a flush was asked for since the last call.
  bool take_flush_request() {
    return flush_requested_.load(std::memory_order_relaxed) && flush_requested_.exchange(false, std::memory_order_seq_cst);
  }
  // Wakes the scheduler unless a wake-up is already pending.
  void wake();
  // Gives the scheduler a step to run whether or not a wake-up is pending (a helping thread
  // hands over a note it will not serve itself).
  void post_step() { wake_(); }

  // Set by the engine for a device whose kernels run on the host's cores (the CPU). There a
  // scheduler thread woken for a small batch only moves the work to another thread: its
  // wake-up costs tens of microseconds on a busy or virtual machine, and a oneTBB worker then
  // spins (yielding) before it sleeps again, taking turns on the cores with the threads that
  // compute (mlp_infer_b1, concurrent_infer). A GPU's stream keeps its scheduler thread.
  void let_readers_run_small_batches(bool on) { readers_run_ = on; }
  // Scheduler side, after each batch it ran: what the next reader's choice is based on (its
  // time, its messages, and the sequence number after its last message).
  // `bytes`: of the batch's outputs (flow control).
  void note_batch(std::uint64_t nanoseconds, std::size_t messages, std::uint64_t end_seq, std::uint64_t bytes) {
    flow_.ran(messages, bytes);
    last_batch_ns_.store(nanoseconds, std::memory_order_relaxed);
    last_batch_messages_.store(messages, std::memory_order_relaxed);
    last_batch_end_seq_.store(end_seq, std::memory_order_relaxed);
  }
  // Reads and syncs that stepped the stream themselves instead of waking the scheduler
  // (counters()).
  std::uint64_t batches_run_by_readers() const { return run_by_readers_.load(std::memory_order_relaxed); }

  // Scheduler side: clear the idle flag, then take what is queued (any order; sort by seq).
  void begin_drain() {
    armed_.store(false, std::memory_order_seq_cst);
    since_wake_.store(0, std::memory_order_relaxed);
  }
  std::size_t drain(std::vector<OpIr>& into);
  // The bytes of a message's outputs, as flow control counts them.
  static std::uint64_t output_bytes(const OpIr& op) {
    std::uint64_t bytes = 0;
    for (const TensorIr& t : op.outputs) bytes += t.bytes();
    return bytes;
  }

  std::uint64_t submitted() const { return next_seq_.load(std::memory_order_relaxed); }

 private:
  moodycamel::ConcurrentQueue<OpIr> queue_;
  std::atomic<std::uint64_t> next_seq_{0};
  std::atomic<bool> armed_{false};
  std::atomic<std::size_t> since_wake_{0};  // messages since the last wake-up (a hint)
  std::function<void()> wake_;
  std::function<void()> help_;
  bool readers_run_ = false;
  FlowControl flow_{next_seq_};
  std::atomic<bool> flush_requested_{false};
  std::atomic<std::uint64_t> last_batch_ns_{UINT64_MAX};  // none yet: the first reader wakes the scheduler
  std::atomic<std::size_t> last_batch_messages_{0};
  std::atomic<std::uint64_t> last_batch_end_seq_{0};
  std::atomic<std::uint64_t> run_by_readers_{0};

  bool small_enough(std::uint64_t seq) const;
};

}  // namespace kiln
