// The engine's public controls: waiting on a device, its memory statistics and limits, and the
// scheduler's counters. The engine itself (engine/runtime.h) is created on first use.
#pragma once
#include <atomic>
#include <memory>
#include <vector>

#include "engine/tensor.h"
#include "memory/memory.h"

namespace kiln {


// Scheduler and fusion counters of one device.
struct EngineCounters {
  std::uint64_t ops_submitted = 0;
  std::uint64_t ops_run = 0;
  std::uint64_t kernels_launched = 0;
  std::uint64_t inplace_reuses = 0;
  std::uint64_t ops_failed = 0;
  std::uint64_t batches = 0;
};

// Completes when every op submitted to `device` before this call has run (same as
// device.sync()). No default device: a bare sync() would clash with POSIX sync().
Future<void> sync(Device device);
MemoryStats memory_stats(Device device = Device::cpu());
void reset_peak_memory(Device device = Device::cpu());
// Caps the bytes the device's pool may reserve (0: no cap); allocations over it fail through
// the futures of the tensors they were for.
void set_memory_limit(Device device, std::size_t bytes);
void release_cached_memory(Device device = Device::cpu());
EngineCounters counters(Device device = Device::cpu());
std::vector<Device> devices();
std::string device_name(Device device);

}  // namespace kiln
