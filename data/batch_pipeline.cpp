// One mutex guards the hand-over; batches are built outside it. Workers claim batch indices in
// order, so with a window of `ahead` batches the consumer's wait is short whenever the workers
// keep up, and memory stays bounded by `ahead` batches whatever the consumer does.
#include "kiln/data/batch_pipeline.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "kiln/base/error.h"

namespace kiln::data::detail {

namespace {

struct Built {
  std::shared_ptr<void> batch;
  std::exception_ptr error;
};

}  // namespace

struct BatchPipeline::State {
  std::int64_t end = 0;
  std::int64_t ahead = 1;
  MakeBatch make;
  std::string context;

  std::mutex mutex;
  std::condition_variable may_claim;    // a worker may claim the next batch, or must stop
  std::condition_variable batch_built;  // a built batch arrived
  std::int64_t next_to_claim = 0;
  std::int64_t next_to_deliver = 0;
  bool stopping = false;
  bool failed = false;
  std::map<std::int64_t, Built> built;  // finished batches the consumer has not taken yet
  std::vector<std::thread> workers;

  Built build(std::int64_t index) const {
    Built b;
    try {
      b.batch = make(index);
    } catch (...) {
      b.error = std::current_exception();
    }
    return b;
  }

  void work() {
    std::unique_lock lock(mutex);
    for (;;) {
      may_claim.wait(lock, [&] { return stopping || next_to_claim >= end || next_to_claim < next_to_deliver + ahead; });
      if (stopping || next_to_claim >= end) return;
      const std::int64_t index = next_to_claim++;
      lock.unlock();
      Built b = build(index);
      lock.lock();
      built.emplace(index, std::move(b));
      batch_built.notify_one();
    }
  }

  void stop() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    may_claim.notify_all();
    for (std::thread& t : workers) t.join();
    workers.clear();
  }

  // Rethrows a batch's error as a kiln::Error that says where it happened.
  [[noreturn]] void fail(std::int64_t index, const std::exception_ptr& error) const {
    const std::string where = "batch " + std::to_string(index) + " of " + context + ": ";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      throw Error("DataLoader", where + e.what());
    } catch (...) {
      throw Error("DataLoader", where + "an exception that is not a std::exception");
    }
  }
};

BatchPipeline::BatchPipeline(std::int64_t first, std::int64_t end, int workers, int ahead, MakeBatch make,
                             std::string context)
    : state_(std::make_unique<State>()) {
  KILN_CHECK(0 <= first && first <= end && workers >= 0 && ahead >= 1, "DataLoader",
             "invalid pipeline: batches " + std::to_string(first) + " to " + std::to_string(end) + ", " +
                 std::to_string(workers) + " workers, " + std::to_string(ahead) + " batches ahead");
  state_->end = end;
  state_->next_to_claim = first;
  state_->next_to_deliver = first;
  state_->ahead = ahead;
  state_->make = std::move(make);
  state_->context = std::move(context);
  const auto threads = static_cast<int>(std::min<std::int64_t>(workers, end - first));
  state_->workers.reserve(static_cast<std::size_t>(threads));
  try {
    for (int i = 0; i < threads; ++i) state_->workers.emplace_back([s = state_.get()] { s->work(); });
  } catch (...) {
    state_->stop();  // joins the threads already started
    throw;
  }
}

BatchPipeline::~BatchPipeline() { state_->stop(); }

std::shared_ptr<void> BatchPipeline::next() {
  State& s = *state_;
  if (s.failed || s.next_to_deliver >= s.end) return nullptr;
  const std::int64_t index = s.next_to_deliver;
  Built b;
  if (s.workers.empty()) {
    b = s.build(index);
    ++s.next_to_deliver;
  } else {
    std::unique_lock lock(s.mutex);
    s.batch_built.wait(lock, [&] { return s.built.count(index) != 0; });
    auto it = s.built.find(index);
    b = std::move(it->second);
    s.built.erase(it);
    ++s.next_to_deliver;
    if (b.error) s.stopping = true;
    lock.unlock();
    s.may_claim.notify_all();
  }
  if (b.error) {
    s.failed = true;
    s.fail(index, b.error);
  }
  return std::move(b.batch);
}

}  // namespace kiln::data::detail
