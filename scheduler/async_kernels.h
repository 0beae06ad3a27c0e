// AsyncKernels: kernels run as oneTBB tasks, each as soon as the kernels whose outputs it reads
// are done. The executor uses it on a device whose kernels run on the host's cores (the CPU)
// when a batch holds the work of several submitting threads: their ops are independent of each
// other except where one reads what another made, so the threads' kernels run side by side, each
// sharing the cores with the others (a kernel's own parallel_for takes what oneTBB's workers have
// free), instead of one after another in submission order.
//
// The executor still does all the bookkeeping in submission order on its own thread (entity
// table, buffer choice, in-place decisions); only the kernels move, and each starts while the
// executor goes on with the next ops. A kernel holds references to the buffers it reads and
// writes until it has run, so no buffer goes back to the pool, or is overwritten in place, while
// a kernel still needs it.
#pragma once
#include <atomic>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/memory/memory.h"
#include "kiln/ops/ir.h"

namespace kiln {

struct AsyncKernel {
  std::function<void()> run;         // throws on failure
  const char* name = "";             // the op's name, for errors that are not kiln::Errors
  std::vector<BufferPtr> buffers;    // what it reads and writes, held until it has run
  std::vector<AsyncKernel*> after;   // kernels whose outputs it reads (started before it)
  std::vector<EntityId> outputs;     // entities that hold its result (views of it included)
  std::exception_ptr error;          // its failure, or the failure of a kernel it reads from

  // Between start() and the kernel's end: kernels to start after it, and whether it is done
  // (a kernel started later that reads it then does not wait for it).
  std::mutex lock;
  std::vector<AsyncKernel*> successors;
  bool done = false;
  bool started = false;  // start() was called (an exception between add() and start() skips it)
  std::atomic<std::size_t> waiting{1};  // unfinished kernels in `after`, plus 1 until start()
};

class AsyncKernels {
 public:
  AsyncKernels();
  ~AsyncKernels();  // waits for the kernels started
  AsyncKernels(const AsyncKernels&) = delete;
  AsyncKernels& operator=(const AsyncKernels&) = delete;

  // Records a kernel: fill in run, name, buffers and after, then start() it (outputs may be
  // added after start(): only finish() reads them). The reference stays valid until finish().
  AsyncKernel& add() { return kernels_.emplace_back(); }
  // A buffer that kernel `k` writes: held until it has run, and counted in output_bytes().
  void hold_output(AsyncKernel& k, BufferPtr buffer) {
    output_bytes_ += buffer ? buffer->bytes() : 0;
    k.buffers.push_back(std::move(buffer));
  }
  // Runs `k` once the kernels in its `after` are done (now, if they are). A kernel whose
  // predecessor failed does not run and takes that error.
  void start(AsyncKernel& k);

  bool empty() const { return kernels_.empty(); }
  std::size_t output_bytes() const { return output_bytes_; }  // of the kernels not finished

  // Waits for every kernel started, then calls done(kernel) for each, in the order they were
  // added, and forgets them.
  void finish(const std::function<void(AsyncKernel&)>& done);

 private:
  void execute(AsyncKernel& k);
  void release(AsyncKernel& k);  // one of k's predecessors is done (or start() has run)

  std::deque<AsyncKernel> kernels_;  // a deque: kernels never move while tasks point at them
  std::size_t output_bytes_ = 0;
  std::size_t started_ = 0;
  // Counts the kernels that ended, with release order: finish() acquires it after the task
  // group's wait, which ThreadSanitizer does not see (oneTBB is not instrumented).
  std::atomic<std::size_t> finished_{0};
  struct Tasks;
  std::unique_ptr<Tasks> tasks_;
};

}  // namespace kiln
