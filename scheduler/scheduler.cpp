#include "kiln/scheduler/scheduler.h"

#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <thread>

#include "kiln/base/log.h"
#include "kiln/streams/runtime_settings.h"

namespace kiln {

namespace {

// Restores sequence order: messages from different threads may leave the queue out of order,
// and a message whose predecessor is still between fetch_add and enqueue must wait for it.
class StreamRunner {
 public:
  StreamRunner(Stream& stream, Executor& executor) : stream_(stream), executor_(executor) {}

  // The scheduler's task, woken by a message, and a thread about to wait on a future (which
  // runs the pending work itself rather than wait for a worker to wake up) both come here.
  // Neither ever blocks on the other: whoever finds the step taken leaves a note (rerun_) and
  // returns, and the holder steps again for it before letting go. With a mutex the worker woken
  // by a read blocked behind the helping thread, which then paid a futex wake-up per read
  // (~9% of small_ops' time).
  //
  // A thread that helps (`helping`: it is about to wait for its own read or sync) steps once:
  // a note left meanwhile is handed to a scheduler thread, so that the helper returns to its
  // result instead of running work that others submitted after it.
  void step(bool helping) {
    // The thread that runs the device's work is what held-back submitters wait for: a drop or
    // an upload it makes on the way must never wait in turn.
    const FlowControl::Exempt never_held_back;
    rerun_.store(true);
    // All seq_cst: if our exchange finds running_ set, it comes before the holder's release
    // of running_, which comes before the holder's check of rerun_; so the holder sees our note.
    // The exchange and the release also order one step after another for ThreadSanitizer (what
    // oneTBB's uninstrumented hand-off between workers guarantees).
    for (bool first = true; rerun_.load(); first = false) {
      if (helping && !first) {
        stream_.post_step();
        return;
      }
      if (running_.exchange(true)) return;
      rerun_.store(false);
      struct Release {
        std::atomic<bool>& running;
        ~Release() { running.store(false); }
      } release{running_};  // also when a step throws
      step_locked();
    }
  }

  // The scheduler waits here at shutdown, so that the last step happens before destruction.
  void wait_idle() const {
    while (running_.load()) std::this_thread::yield();
  }

 private:
  void step_locked() {
    stream_.begin_drain();
    const std::size_t first = pending_.size();
    stream_.drain(pending_);
    // The common case, one submitting thread: the messages arrive in sequence order and go
    // straight to pending_. Otherwise they are put back in order through window_.
    bool in_order = window_.empty();
    for (std::size_t k = first; in_order && k < pending_.size(); ++k) in_order = pending_[k].seq == next_seq_ + (k - first);
    if (in_order) {
      for (std::size_t k = first; k < pending_.size(); ++k)
        flush_ |= pending_[k].kind == OpKind::read || pending_[k].kind == OpKind::sync;
      next_seq_ += pending_.size() - first;
    } else {
      for (std::size_t k = first; k < pending_.size(); ++k) {
        OpIr& op = pending_[k];
        const std::uint64_t pos = op.seq - next_seq_;
        if (pos >= window_.size()) window_.resize(pos + 1);
        window_[pos].emplace(std::move(op));
      }
      pending_.resize(first);
    }
    const RuntimeSettings& settings = RuntimeSettings::get();
    while (!window_.empty() && window_.front().has_value()) {
      OpIr& op = *window_.front();
      flush_ |= op.kind == OpKind::read || op.kind == OpKind::sync;
      pending_.push_back(std::move(op));
      window_.pop_front();
      ++next_seq_;
    }
    // With fusion on, pending ops wait for a read, a sync or the threshold, so that whole
    // chains reach the planner together; without it they run as they come.
    // A submitter held back by flow control asks for a flush: everything pending runs now.
    const bool requested = stream_.take_flush_request();
    const bool fusion = settings.fusion.load(std::memory_order_relaxed);
    const bool full = pending_.size() >= settings.flush_threshold.load(std::memory_order_relaxed);
    const bool run = flush_ || requested || !fusion || full;
    if (run && !pending_.empty()) {
      // Run for a read or a sync alone, the batch ends with the last of them: what was
      // submitted after it waits for its own read (or the threshold, or a held-back
      // submitter), so a reader never waits for work submitted after its read.
      std::size_t n = pending_.size();
      if (fusion && !requested && !full)
        while (n > 0 && pending_[n - 1].kind != OpKind::read && pending_[n - 1].kind != OpKind::sync) --n;
      if (n == 0) n = pending_.size();  // (flush_ without a reader pending: run everything)
      run_prefix(n);
      flush_ = false;  // what is left holds no read or sync
    }
    if (!window_.empty()) {
      // A message is still between its sequence number and the queue on another thread; it
      // may not wake us (only reads and syncs do), so come back for it.
      if (log_enabled(spdlog::level::trace))
        logger().trace("stream waits for seq {} ({} later ops queued)", next_seq_, window_.size() - 1);
      stream_.wake();
    }
  }

  // Runs pending_[0, n) as one batch and keeps the rest pending.
  void run_prefix(std::size_t n) {
    std::uint64_t bytes = 0;
    for (std::size_t k = 0; k < n; ++k) bytes += Stream::output_bytes(pending_[k]);
    const std::uint64_t end_seq = pending_[n - 1].seq + 1;
    const auto start = std::chrono::steady_clock::now();
    // Also when the batch throws: its messages are done with, and held-back submitters must
    // see them leave the stream's bound.
    struct Done {
      StreamRunner& r;
      std::size_t n;
      std::uint64_t end_seq, bytes;
      std::chrono::steady_clock::time_point start;
      ~Done() {
        r.stream_.note_batch(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                             std::chrono::steady_clock::now() - start)
                                                             .count()),
                             n, end_seq, bytes);
        // Drops payloads (host data, completions) on this thread.
        r.pending_.erase(r.pending_.begin(), r.pending_.begin() + static_cast<std::ptrdiff_t>(n));
      }
    } done{*this, n, end_seq, bytes, start};
    executor_.run_batch(std::span<OpIr>(pending_.data(), n));
  }

  std::atomic<bool> running_{false};  // a thread is in step_locked()
  std::atomic<bool> rerun_{false};    // a caller found the step taken: the holder steps again
  Stream& stream_;
  Executor& executor_;
  std::uint64_t next_seq_ = 0;
  std::deque<std::optional<OpIr>> window_;  // out-of-order arrivals, by seq - next_seq_
  std::vector<OpIr> pending_;  // in sequence order, waiting for a flush
  bool flush_ = false;         // pending_ holds a read or a sync
};

using DrainNode = tbb::flow::function_node<tbb::flow::continue_msg, tbb::flow::continue_msg, tbb::flow::queueing>;

int worker_count(std::size_t streams) {
  return static_cast<int>(std::max<std::size_t>({1, std::thread::hardware_concurrency(), streams}));
}

}  // namespace

struct Scheduler::Impl {
  // The arena reserves no slot for an external thread: user threads wait on futures, so every
  // core must be available to TBB workers.
  explicit Impl(std::size_t streams)
      : workers(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(worker_count(streams) + 1)),
        arena(worker_count(streams), 0) {}
  tbb::global_control workers;
  tbb::task_arena arena;
  std::unique_ptr<tbb::flow::graph> graph;
  std::vector<std::unique_ptr<StreamRunner>> runners;
  std::vector<std::unique_ptr<DrainNode>> nodes;
};

Scheduler::Scheduler(std::size_t streams) : impl_(std::make_unique<Impl>(streams)) {
  impl_->arena.execute([&] { impl_->graph = std::make_unique<tbb::flow::graph>(); });
}

Scheduler::~Scheduler() {
  impl_->arena.execute([&] { impl_->graph->wait_for_all(); });
  for (auto& r : impl_->runners) r->wait_idle();
}

void Scheduler::attach(Stream& stream, Executor& executor) {
  auto runner = std::make_unique<StreamRunner>(stream, executor);
  StreamRunner* r = runner.get();
  std::unique_ptr<DrainNode> node;
  impl_->arena.execute([&] {
    node = std::make_unique<DrainNode>(*impl_->graph, tbb::flow::serial, [r](tbb::flow::continue_msg) {
      r->step(false);
      return tbb::flow::continue_msg{};
    });
  });
  DrainNode* n = node.get();
  stream.set_wake([n] { n->try_put(tbb::flow::continue_msg{}); });
  stream.set_help([r] { r->step(true); });
  impl_->runners.push_back(std::move(runner));
  impl_->nodes.push_back(std::move(node));
}

}  // namespace kiln
