// Engine: owns the devices, their streams and executors, and the scheduler that connects them.
// One process-wide instance, created on first use and torn down at exit after the scheduler
// has drained.
#pragma once
#include <atomic>
#include <memory>
#include <vector>

#include "devices/device.h"
#include "engine/device.h"
#include "engine/future.h"
#include "scheduler/executor.h"
#include "scheduler/scheduler.h"
#include "streams/stream.h"

namespace kiln {

struct DeviceRuntime {
  Device device;
  std::unique_ptr<DeviceBackend> backend;
  std::unique_ptr<Executor> executor;
  Stream stream;
  // What a thread waiting on this stream's results calls first (Stream::help).
  FutureHelper helper() {
    return FutureHelper{[](void* s) { static_cast<Stream*>(s)->help(); }, &stream, !backend->info().on_host_cores};
  }
};

class Engine {
 public:
  static Engine& get();
  // False once the engine is being destroyed: handles dropped after that send nothing.
  static bool alive();

  DeviceRuntime& runtime(Device device, const char* op);
  EntityId new_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
  std::vector<Device> devices() const;

  Engine();
  ~Engine();

 private:
  std::vector<std::unique_ptr<DeviceRuntime>> runtimes_;
  std::atomic<EntityId> next_id_{1};
  std::unique_ptr<Scheduler> scheduler_;  // declared last: destroyed (drained) first
};

}  // namespace kiln
