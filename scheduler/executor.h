// The executor of one device: owns the entity table (entity id -> buffer, or the error that
// stopped it), decides in-place reuse from ownership, and runs ops on the device in sequence
// order. It only ever runs on its stream's serial scheduler node, so the table needs no lock.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <span>
#include <unordered_map>

#include "devices/device.h"

namespace kiln {

struct ExecutorCounters {
  std::atomic<std::uint64_t> ops_run{0};
  std::atomic<std::uint64_t> kernels_launched{0};
  std::atomic<std::uint64_t> inplace_reuses{0};
  std::atomic<std::uint64_t> ops_failed{0};
  std::atomic<std::uint64_t> batches{0};
};

class Executor {
 public:
  explicit Executor(DeviceBackend& device);
  ~Executor();

  void run_batch(std::span<OpIr> ops);
  const ExecutorCounters& counters() const { return counters_; }
  DeviceBackend& device() { return device_; }

 private:
  struct Slot {
    BufferPtr buffer;
    std::exception_ptr error;  // set when the op that makes this entity (or one before it) failed
  };

  void run_one(OpIr& op);
  void run_compute(OpIr& op);
  void run_read(OpIr& op);
  void fail_outputs(const OpIr& op, std::exception_ptr error);
  Slot* find(EntityId id);

  DeviceBackend& device_;
  std::unordered_map<EntityId, Slot> slots_;
  ExecutorCounters counters_;
};

}  // namespace kiln
