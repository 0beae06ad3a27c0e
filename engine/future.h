// Future<T>: the result of reading a tensor or syncing a device. get() waits and rethrows the
// kiln::Error of the op that failed upstream, if any.
#pragma once
#include <chrono>
#include <future>

namespace kiln {

template <class T> class Future {
 public:
  Future() = default;
  explicit Future(std::future<T> f) : f_(std::move(f)) {}
  T get() { return f_.get(); }
  void wait() const { f_.wait(); }
  bool ready() const { return f_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  bool valid() const { return f_.valid(); }

 private:
  std::future<T> f_;
};

}  // namespace kiln
