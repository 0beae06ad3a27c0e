#include "scheduler/scheduler.h"

#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <thread>

#include "ops/log.h"
#include "streams/runtime_settings.h"

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
  void step() {
    rerun_.store(true);
    // All seq_cst: if our exchange finds running_ set, it comes before the holder's release
    // of running_, which comes before the holder's check of rerun_; so the holder sees our note.
    // The exchange and the release also order one step after another for ThreadSanitizer (what
    // oneTBB's uninstrumented hand-off between workers guarantees).
    while (rerun_.load()) {
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
    const bool run = flush_ || !settings.fusion.load(std::memory_order_relaxed) ||
                     pending_.size() >= settings.flush_threshold.load(std::memory_order_relaxed);
    if (run && !pending_.empty()) {
      const auto start = std::chrono::steady_clock::now();
      executor_.run_batch(pending_);
      stream_.note_batch(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                        std::chrono::steady_clock::now() - start)
                                                        .count()),
                         pending_.size(), next_seq_);
      pending_.clear();  // drops payloads (host data, completions) on this thread
      flush_ = false;
    }
    if (!window_.empty()) {
      // A message is still between its sequence number and the queue on another thread; it
      // may not wake us (only reads and syncs do), so come back for it.
      if (log_enabled(spdlog::level::trace))
        logger().trace("stream waits for seq {} ({} later ops queued)", next_seq_, window_.size() - 1);
      stream_.wake();
    }
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
      r->step();
      return tbb::flow::continue_msg{};
    });
  });
  DrainNode* n = node.get();
  stream.set_wake([n] { n->try_put(tbb::flow::continue_msg{}); });
  stream.set_help([r] { r->step(); });
  impl_->runners.push_back(std::move(runner));
  impl_->nodes.push_back(std::move(node));
}

}  // namespace kiln
