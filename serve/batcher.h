// serve/: running a model inside a service. A Batcher gathers single requests from any number of
// threads into one batched forward pass (at most max_batch rows; a short batch waits for more
// until its oldest request has been queued max_wait, so requests that queued behind a running
// batch go with the next one at once), gives each caller its own future, and delivers a failure to the requests of that batch
// only. Its queue is bounded: a full queue is an error at once (the service answers "busy"),
// never a wait without end. A request may carry a deadline; one that passes before its batch
// starts fails with DeadlineExceeded and costs no compute.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln::serve {

using Clock = std::chrono::steady_clock;

// The batch function: [B, item...] -> [B, out...] on the batcher's device. It is called from the
// batcher's worker thread(s) only; a module's forward pass (`[&](const Tensor& x) { return
// model(x); }`) is one. Rows must not depend on each other (no batch statistics: eval mode).
using BatchFunction = std::function<Tensor(const Tensor& batch)>;

struct BatcherOptions {
  std::size_t max_batch = 32;             // rows in one forward pass
  // How long a short batch may gather, counted from its oldest request's arrival (never past
  // a queued request's deadline, less the last pass's time). 0: run what is queued at once.
  std::chrono::microseconds max_wait{0};
  std::size_t max_queue = 1024;           // requests waiting beyond it: QueueFull
  std::size_t workers = 1;                // threads running batches (each a pass at a time)
  Device device = Device::cpu();          // where the batch tensor is made
};

// Thrown by submit() when max_queue requests are already waiting (the caller sheds load: HTTP 503).
class QueueFull : public Error {
 public:
  using Error::Error;
};
// Thrown by submit() after shutdown() began.
class ShuttingDown : public Error {
 public:
  using Error::Error;
};
// Delivered through a request's future when its deadline passed before its batch ran.
class DeadlineExceeded : public Error {
 public:
  using Error::Error;
};

// A request's answer delivered by call instead of a future (Batcher::submit with a Completion):
// `row` holds the output row, or `error` is set (DeadlineExceeded, the batch's failure). It runs
// on a batcher worker: it must be short and must not throw (an event-driven server posts the
// answer to its own loop), and it must not call shutdown().
using Completion = std::function<void(std::vector<float> row, std::exception_ptr error)>;

struct BatcherStats {
  std::uint64_t requests = 0;             // accepted by submit()
  std::uint64_t rejected_full = 0;        // QueueFull
  std::uint64_t expired = 0;              // DeadlineExceeded
  std::uint64_t failed = 0;               // failed with their batch
  std::uint64_t completed = 0;            // answered with a result
  std::uint64_t batches = 0;              // forward passes run
  std::size_t queued = 0;                 // waiting now
  std::vector<std::uint64_t> batch_rows;  // batch_rows[n]: forward passes that ran n rows (n <= max_batch)
  double mean_batch() const { return batches ? double(completed + failed) / double(batches) : 0.0; }
};

class Batcher {
 public:
  // `item_shape`: one request's shape without the batch dimension ([784] for the MLP).
  Batcher(BatchFunction fn, Shape item_shape, BatcherOptions options = {});
  ~Batcher();  // shutdown(), then waits for the workers
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // One request: `input` holds item_shape's element count of f32 values. The future gives this
  // request's row of the output (out...'s element count). Throws kiln::Error at once for a wrong
  // size, QueueFull when the queue is full, ShuttingDown after shutdown().
  Future<std::vector<float>> submit(std::vector<float> input, std::optional<Clock::time_point> deadline = std::nullopt);

  // The same request answered through `done` (once, from a worker thread) instead of a future:
  // no thread waits for it. Throws as submit() does, and then `done` is never called.
  void submit(std::vector<float> input, Completion done, std::optional<Clock::time_point> deadline = std::nullopt);

  // Compiles and runs the batch function once for each batch size in `batch_sizes` (default:
  // 1..max_batch), so the first real request is as fast as the hundredth. Blocks until done.
  void warm_up(std::vector<std::size_t> batch_sizes = {});

  // Stops accepting (submit throws ShuttingDown), answers every request already queued, then
  // returns. Safe to call more than once and from any thread.
  void shutdown();

  BatcherStats stats() const;
  std::size_t queued() const;  // requests waiting now (cheaper than stats().queued)
  const BatcherOptions& options() const;
  const Shape& item_shape() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::serve
