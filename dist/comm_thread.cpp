#include "kiln/dist/comm_thread.h"

namespace kiln::dist::detail {

CommThread::CommThread() : thread_([this] { loop(); }) {}

CommThread::~CommThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

std::future<void> CommThread::submit(std::function<void()> job) {
  Job j{std::move(job), {}};
  std::future<void> f = j.done.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(j));
  }
  wake_.notify_one();
  return f;
}

void CommThread::loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    if (failure_) {
      job.done.set_exception(failure_);
      continue;
    }
    try {
      job.fn();
      job.done.set_value();
    } catch (...) {
      failure_ = std::current_exception();
      job.done.set_exception(failure_);
    }
  }
}

}  // namespace kiln::dist::detail
