#include "kiln/serve/batcher.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/creation.h"
#include "kiln/serve/warm_up.h"

namespace kiln::serve {

namespace {

struct Request {
  std::vector<float> input;
  Promise<std::vector<float>> answer;
  std::optional<Clock::time_point> deadline;
  Completion done;  // set: answered through it, not through `answer`
  // Where the caller sleeps, announced once its batch is answered. Requests share one while they
  // will form one batch: a new signal starts after max_batch requests and when a batch leaves
  // the queue empty, and batches take the queue's first max_batch (or all), so a batch's
  // requests share one signal and no other batch wakes its callers.
  std::shared_ptr<CompletionSignal> signal;
  Clock::time_point queued_at;  // when submit() queued it: its batch's gathering starts here

  void fail(std::exception_ptr e) {
    if (done)
      done({}, std::move(e));
    else
      answer.set_exception(std::move(e));
  }
  void succeed(std::vector<float> row) {
    if (done)
      done(std::move(row), nullptr);
    else
      answer.set_value(std::move(row));
  }
};

// Announces the signals of a batch's requests when it goes: after every request of the batch
// has its answer (or, if a request were dropped unanswered, its broken promise).
struct Announcer {
  std::vector<std::shared_ptr<CompletionSignal>> signals;
  void add(const std::vector<Request>& batch) {
    for (const Request& r : batch)
      if (r.signal && (signals.empty() || signals.back() != r.signal)) signals.push_back(r.signal);
  }
  ~Announcer() {
    for (const auto& s : signals) s->announce();
  }
};

std::string shape_text(const Shape& s) { return s.str(); }

}  // namespace

struct Batcher::Impl {
  BatchFunction fn;
  Shape item_shape;
  std::size_t item_numel = 1;
  BatcherOptions options;

  mutable std::mutex mutex;
  std::condition_variable arrived;  // a request was queued, or shutdown began
  std::deque<Request> queue;
  bool stopping = false;
  std::shared_ptr<CompletionSignal> open_signal;  // the signal new requests join
  std::size_t open_signal_requests = 0;           // ... and how many have

  std::mutex join_mutex;  // one shutdown() joins; later ones wait for it
  bool joined = false;
  std::vector<std::thread> workers;

  std::atomic<std::uint64_t> requests{0}, rejected_full{0}, expired{0}, failed{0}, completed{0}, batches{0};
  std::unique_ptr<std::atomic<std::uint64_t>[]> batch_rows;  // [max_batch + 1]: passes by row count

  // Queues `r` (whose promise or completion is set); throws QueueFull or ShuttingDown. Returns
  // the signal its caller sleeps on (null for a completion).
  std::shared_ptr<const CompletionSignal> enqueue(Request r);

  Clock::duration last_run{0};  // how long the last forward pass took (under `mutex`)

  // When the gathering for the batch at the queue's front must end: max_wait after its oldest
  // request was queued (not after the worker looked: requests that queued while a batch ran have
  // waited already, and go with the next batch at once), and early enough that a queued
  // deadline is not missed by waiting (the last pass's time before it). Called with the lock
  // held and the queue not empty.
  Clock::time_point gather_until() const {
    Clock::time_point until = queue.front().queued_at + options.max_wait;
    const std::size_t n = std::min(queue.size(), options.max_batch);
    for (std::size_t i = 0; i < n; ++i)
      if (queue[i].deadline) until = std::min(until, *queue[i].deadline - last_run);
    return until;
  }

  // Takes the next batch: waits for a first request, then, while the batch is not full, for more
  // until gather_until(). Empty once shutdown began and the queue is drained.
  std::vector<Request> next_batch() {
    std::unique_lock lock(mutex);
    for (;;) {
      arrived.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return {};
      if (stopping || queue.size() >= options.max_batch || options.max_wait.count() <= 0) break;
      const Clock::time_point until = gather_until();
      if (Clock::now() >= until) break;
      // With several workers, another one may take the requests while this one gathers: then
      // the queue is empty and it waits again (an empty batch means shutdown to work()). A new
      // request with a sooner deadline brings the end forward: it looks again.
      arrived.wait_until(lock, until, [&] {
        return stopping || queue.empty() || queue.size() >= options.max_batch || gather_until() < until;
      });
    }
    const std::size_t n = std::min(queue.size(), options.max_batch);
    std::vector<Request> batch;
    batch.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(queue.front()));
      queue.pop_front();
    }
    // submit() wakes a worker only for the first request of a batch: what this batch left
    // behind is the next one's first, for another worker (or this one, when it comes back).
    if (!queue.empty()) arrived.notify_one();
    // Requests from now on share a new signal: the next batch's callers, woken together.
    else
      open_signal.reset();
    return batch;
  }

  // Requests whose deadline passed fail now and take no row of the batch.
  void drop_expired(std::vector<Request>& batch) {
    const auto now = Clock::now();
    auto keep = batch.begin();
    for (auto& r : batch) {
      if (r.deadline && *r.deadline < now) {
        expired.fetch_add(1, std::memory_order_relaxed);
        r.fail(std::make_exception_ptr(
            DeadlineExceeded("serve::Batcher", "the request's deadline passed before its batch ran")));
      } else {
        if (&*keep != &r) *keep = std::move(r);  // a self-move would empty the input
        ++keep;
      }
    }
    batch.erase(keep, batch.end());
  }

  void run(std::vector<Request>& batch) {
    const std::size_t rows = batch.size();
    // Serving never takes gradients: a module's parameters would otherwise record a graph.
    const NoGradGuard no_grad;
    const Clock::time_point started = Clock::now();
    std::vector<float> values;
    try {
      std::vector<float> data(rows * item_numel);
      for (std::size_t i = 0; i < rows; ++i)
        std::copy(batch[i].input.begin(), batch[i].input.end(), data.begin() + i * item_numel);
      Shape shape = item_shape;
      shape.insert(0, static_cast<std::int64_t>(rows));
      Tensor out = fn(from_vector(std::move(data), shape, options.device));
      KILN_CHECK(out.defined() && out.shape().rank() >= 1 && out.shape()[0] == static_cast<std::int64_t>(rows),
                 "serve::Batcher",
                 "the batch function must return one row per request: a batch of " + std::to_string(rows) + " gave " +
                     (out.defined() ? shape_text(out.shape()) : std::string("an undefined tensor")));
      values = out.to_vector<float>().get();
      std::lock_guard lock(mutex);
      last_run = Clock::now() - started;
    } catch (...) {
      // The failure belongs to this batch: its requests get it, the next batch runs as usual.
      const std::exception_ptr e = std::current_exception();
      failed.fetch_add(rows, std::memory_order_relaxed);
      batches.fetch_add(1, std::memory_order_relaxed);
      for (auto& r : batch) r.fail(e);
      return;
    }
    // Counted before the answers go out: a caller that has its answer sees it in stats().
    completed.fetch_add(rows, std::memory_order_relaxed);
    batches.fetch_add(1, std::memory_order_relaxed);
    batch_rows[rows].fetch_add(1, std::memory_order_relaxed);
    const std::size_t width = values.size() / rows;
    for (std::size_t i = 0; i < rows; ++i)
      batch[i].succeed(std::vector<float>(values.begin() + i * width, values.begin() + (i + 1) * width));
  }

  void work() {
    for (;;) {
      Announcer announcer;  // declared first: announces after the batch below is gone
      std::vector<Request> batch = next_batch();
      if (batch.empty()) return;
      announcer.add(batch);
      drop_expired(batch);
      if (!batch.empty()) run(batch);
    }
  }
};

Batcher::Batcher(BatchFunction fn, Shape item_shape, BatcherOptions options) : impl_(std::make_unique<Impl>()) {
  KILN_CHECK(static_cast<bool>(fn), "serve::Batcher", "the batch function is empty");
  KILN_CHECK(options.max_batch >= 1, "serve::Batcher", "max_batch must be at least 1");
  KILN_CHECK(options.max_queue >= 1, "serve::Batcher", "max_queue must be at least 1");
  KILN_CHECK(options.workers >= 1, "serve::Batcher", "workers must be at least 1");
  impl_->fn = std::move(fn);
  impl_->item_shape = std::move(item_shape);
  impl_->item_numel = static_cast<std::size_t>(impl_->item_shape.numel());
  KILN_CHECK(impl_->item_numel >= 1, "serve::Batcher", "the item shape " + shape_text(impl_->item_shape) + " is empty");
  impl_->options = options;
  impl_->batch_rows = std::make_unique<std::atomic<std::uint64_t>[]>(options.max_batch + 1);
  for (std::size_t i = 0; i < options.workers; ++i) impl_->workers.emplace_back([impl = impl_.get()] { impl->work(); });
}

Batcher::~Batcher() { shutdown(); }

std::shared_ptr<const CompletionSignal> Batcher::Impl::enqueue(Request r) {
  KILN_CHECK(r.input.size() == item_numel, "serve::Batcher::submit",
             "a request holds " + std::to_string(r.input.size()) + " values but the item shape " +
                 shape_text(item_shape) + " needs " + std::to_string(item_numel));
  bool wake = false;
  std::shared_ptr<const CompletionSignal> signal;
  {
    std::lock_guard lock(mutex);
    if (stopping) throw ShuttingDown("serve::Batcher::submit", "the batcher is shutting down");
    if (queue.size() >= options.max_queue) {
      rejected_full.fetch_add(1, std::memory_order_relaxed);
      throw QueueFull("serve::Batcher::submit",
                      "the queue is full (" + std::to_string(options.max_queue) + " requests waiting)");
    }
    // A completion takes its place in the signal's count without joining it, so that a signal's
    // requests still lie within one batch's span of the queue.
    if (!open_signal || open_signal_requests == options.max_batch) {
      open_signal = std::make_shared<CompletionSignal>();
      open_signal_requests = 0;
    }
    ++open_signal_requests;
    r.queued_at = Clock::now();
    // A worker gathering sleeps until gather_until(): a deadline that ends the gathering sooner
    // must wake it to look again.
    const bool sooner = r.deadline && !queue.empty() && *r.deadline < queue.front().queued_at + options.max_wait;
    if (!r.done) {
      r.signal = open_signal;
      signal = open_signal;
    }
    queue.push_back(std::move(r));
    // A worker acts on the first request (it starts gathering) and on a full batch (it stops);
    // in between it sleeps out its max_wait, not woken to find the batch still short.
    wake = queue.size() == 1 || queue.size() >= options.max_batch || sooner;
  }
  requests.fetch_add(1, std::memory_order_relaxed);
  if (wake) arrived.notify_one();
  return signal;
}

Future<std::vector<float>> Batcher::submit(std::vector<float> input, std::optional<Clock::time_point> deadline) {
  Request r{std::move(input), {}, deadline, {}, nullptr, {}};  // its signal is chosen under the lock
  auto answer = r.answer.state();
  std::shared_ptr<const CompletionSignal> signal = impl_->enqueue(std::move(r));
  // The caller sleeps until its answer (engine/future.h: poll): the worker that computes it
  // needs the cores more than a crowd of polling clients does. It sleeps on the signal, which
  // wakes a batch's callers at once (engine/future.h: CompletionSignal).
  return Future<std::vector<float>>(std::move(answer), FutureHelper{.poll = false, .signal = std::move(signal)});
}

void Batcher::submit(std::vector<float> input, Completion done, std::optional<Clock::time_point> deadline) {
  KILN_CHECK(static_cast<bool>(done), "serve::Batcher::submit", "the completion is empty");
  Request r{std::move(input), {}, deadline, std::move(done), nullptr, {}};
  impl_->enqueue(std::move(r));
}

void Batcher::warm_up(std::vector<std::size_t> batch_sizes) {
  if (batch_sizes.empty())
    for (std::size_t b = 1; b <= impl_->options.max_batch; ++b) batch_sizes.push_back(b);
  serve::warm_up(impl_->fn, impl_->item_shape, batch_sizes, impl_->options.device);
}

void Batcher::shutdown() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->arrived.notify_all();
  std::lock_guard join(impl_->join_mutex);
  if (impl_->joined) return;
  for (auto& t : impl_->workers)
    if (t.get_id() != std::this_thread::get_id())
      t.join();
    else
      t.detach();  // shutdown() from inside a batch function: that worker ends on its own
  impl_->joined = true;
}

BatcherStats Batcher::stats() const {
  const Impl& s = *impl_;
  BatcherStats out;
  out.requests = s.requests.load();
  out.rejected_full = s.rejected_full.load();
  out.expired = s.expired.load();
  out.failed = s.failed.load();
  out.completed = s.completed.load();
  out.batches = s.batches.load();
  out.batch_rows.resize(s.options.max_batch + 1);
  for (std::size_t n = 0; n <= s.options.max_batch; ++n) out.batch_rows[n] = s.batch_rows[n].load();
  std::lock_guard lock(s.mutex);
  out.queued = s.queue.size();
  return out;
}

std::size_t Batcher::queued() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->queue.size();
}

const BatcherOptions& Batcher::options() const { return impl_->options; }
const Shape& Batcher::item_shape() const { return impl_->item_shape; }

}  // namespace kiln::serve
