// Engine: owns the devices, their streams and executors, and the scheduler that connects them.
// One process-wide instance, created on first use and torn down at exit after the scheduler
// has drained. It starts with the CPU alone: Vulkan is discovered on first use of a GPU (or
// when devices are listed), so a CPU-only program never loads a Vulkan driver (opening Mesa's
// lavapipe took 250-300 ms of a CPU program's start).
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/devices/device.h"
#include "kiln/engine/device.h"
#include "kiln/engine/future.h"
#include "kiln/scheduler/executor.h"
#include "kiln/scheduler/scheduler.h"
#include "kiln/streams/stream.h"

namespace kiln {

struct DeviceRuntime {
  Device device;
  std::unique_ptr<DeviceBackend> backend;
  std::unique_ptr<Executor> executor;
  Stream stream;
  // What a thread waiting on this stream's results calls first (Stream::help).
  FutureHelper helper() {
    return FutureHelper{.run = [](void* s) { static_cast<Stream*>(s)->help(); },
                        .stream = &stream,
                        .nap = !backend->info().on_host_cores,
                        .signal = nullptr};
  }
};

class Engine {
 public:
  static Engine& get();
  // False once the engine is being destroyed: handles dropped after that send nothing.
  static bool alive();

  // The CPU's runtime costs a compare; a GPU's opens the GPUs the first time.
  DeviceRuntime& runtime(Device device, const char* op) {
    if (device == Device::cpu()) return *cpu_;
    return gpu_runtime(device, op);
  }
  EntityId new_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
  std::vector<Device> devices();
  // Whether the GPUs have been opened (runtimes of the CPU alone until then).
  bool gpus_opened() const { return gpus_opened_.load(std::memory_order_acquire); }

  Engine();
  ~Engine();  // shut_down()

  // Stops the scheduler, waits for every device and closes the GPUs; handles dropped after it
  // send nothing (alive() is false). Once; also at exit, before the GPU driver's statics go.
  void shut_down();

 private:
  DeviceRuntime& gpu_runtime(Device device, const char* op);
  void open_gpus();

  std::unique_ptr<DeviceRuntime> cpu_;
  // Written once, inside open_gpus_ (call_once), and only read after it.
  std::vector<std::unique_ptr<DeviceRuntime>> gpus_;
  std::once_flag open_gpus_;
  std::atomic<bool> gpus_opened_{false};
  std::once_flag shut_down_;
  std::atomic<EntityId> next_id_{1};
  std::unique_ptr<Scheduler> scheduler_;  // declared last: destroyed (drained) first
};

}  // namespace kiln
