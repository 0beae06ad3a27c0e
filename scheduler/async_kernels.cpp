#include "kiln/scheduler/async_kernels.h"

#include <tbb/task_group.h>

#include "kiln/base/error.h"
#include "kiln/base/trace.h"

namespace kiln {

struct AsyncKernels::Tasks {
  tbb::task_group group;
};

AsyncKernels::AsyncKernels() : tasks_(std::make_unique<Tasks>()) {}

AsyncKernels::~AsyncKernels() { tasks_->group.wait(); }

void AsyncKernels::start(AsyncKernel& k) {
  k.started = true;
  ++started_;
  for (AsyncKernel* p : k.after) {
    const std::lock_guard guard(p->lock);
    if (p->done) continue;
    p->successors.push_back(&k);
    k.waiting.fetch_add(1, std::memory_order_relaxed);
  }
  release(k);  // the 1 it was made with
}

void AsyncKernels::release(AsyncKernel& k) {
  // The last release hands k to a task: acq_rel pairs the writes of every kernel it reads (and
  // of the thread that set it up) with the task that runs it.
  if (k.waiting.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
#if defined(__SANITIZE_THREAD__)
  // Under ThreadSanitizer a ready kernel runs at once on the thread that made it ready, as
  // parallel_for runs its ranges inline (parallel.h): oneTBB is not instrumented, and TSan
  // reports its hand-over of every task's functor to the worker that runs it.
  execute(k);
#else
  tasks_->group.run([this, &k] { execute(k); });
#endif
}

void AsyncKernels::execute(AsyncKernel& k) {
  k.waiting.load(std::memory_order_acquire);
  for (AsyncKernel* p : k.after)
    if (p->error && !k.error) k.error = p->error;
  if (!k.error) {
    try {
      const trace::Span span(k.name, "kernel");
      k.run();
    } catch (const Error&) {
      k.error = std::current_exception();
    } catch (const std::exception& e) {
      // Device-level failures (out of memory) gain the op's name on their way out.
      k.error = std::make_exception_ptr(Error(k.name, e.what()));
    } catch (...) {
      k.error = std::make_exception_ptr(Error(k.name, "unknown failure"));
    }
  }
  k.run = nullptr;
  k.buffers.clear();  // blocks go back to the pool as soon as nothing needs them
  std::vector<AsyncKernel*> successors;
  {
    const std::lock_guard guard(k.lock);
    k.done = true;
    successors.swap(k.successors);
  }
  for (AsyncKernel* s : successors) release(*s);
  finished_.fetch_add(1, std::memory_order_acq_rel);
}

void AsyncKernels::finish(const std::function<void(AsyncKernel&)>& done) {
  if (kernels_.empty()) return;
  tasks_->group.wait();
  const std::size_t finished = finished_.exchange(0, std::memory_order_acq_rel);
  KILN_CHECK(finished == started_, "scheduler",
             "internal error: " + std::to_string(started_ - finished) + " kernels never ran");
  for (AsyncKernel& k : kernels_) {
    if (!k.started) k.error = std::make_exception_ptr(Error(k.name, "internal error: the kernel was never started"));
    done(k);
  }
  kernels_.clear();
  output_bytes_ = 0;
  started_ = 0;
}

}  // namespace kiln
