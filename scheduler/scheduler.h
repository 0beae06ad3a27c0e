// scheduler/: the oneTBB flow graph that drains device streams. Each device stream gets one
// serial function_node; submitting to an idle stream puts one message into its node, which
// drains the stream, restores sequence order and hands ready ops to the device's executor.
// Kernels run inside the scheduler's task arena, so their parallel_for uses every core.
#pragma once
#include <memory>
#include <vector>

#include "kiln/scheduler/executor.h"
#include "kiln/streams/stream.h"

namespace kiln {

class Scheduler {
 public:
  // `streams`: how many streams will be attached. The arena gets a worker per core and at
  // least one per stream: a step may block (an upload waiting for another stream's read, see
  // kiln::to), and with fewer workers than streams every worker could be blocked so.
  explicit Scheduler(std::size_t streams);
  ~Scheduler();  // waits for the graph to go idle
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Serves `stream` with `executor` from now on; both must outlive the scheduler.
  void attach(Stream& stream, Executor& executor);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
