// The thread every collective of a process group runs on, one after another in submission
// order: collectives match by order across ranks, so they must never overlap on a rank. Work
// handed to it returns a std::future; the caller (a gradient bucket, a user's blocking call)
// waits when it needs the result. After one job failed (a lost peer, a timeout) every later job
// fails at once with the same error: a broken group is never used again.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace kiln::dist::detail {

class CommThread {
 public:
  CommThread();
  ~CommThread();  // finishes the jobs already queued, then joins
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  std::future<void> submit(std::function<void()> job);

 private:
  struct Job {
    std::function<void()> fn;
    std::promise<void> done;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::exception_ptr failure_;  // the first job's error; later jobs get it too
  std::thread thread_;
};

}  // namespace kiln::dist::detail
