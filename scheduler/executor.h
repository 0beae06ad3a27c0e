// The executor of one device: owns the entity table (entity id -> buffer, or the error that
// stopped it), decides in-place reuse from ownership, and runs ops on the device in sequence
// order. It only ever runs on its stream's serial scheduler node, so the table needs no lock.
// On the CPU, a batch that holds several submitting threads' work runs its kernels as tasks
// (AsyncKernels) while the bookkeeping stays here, in sequence order.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/devices/device.h"
#include "kiln/scheduler/async_kernels.h"
#include "kiln/scheduler/fusion_planner.h"
#include "kiln/scheduler/pending_checks.h"
#include "kiln/scheduler/plan_cache.h"

namespace kiln {

struct ExecutorCounters {
  std::atomic<std::uint64_t> ops_run{0};
  std::atomic<std::uint64_t> kernels_launched{0};
  std::atomic<std::uint64_t> inplace_reuses{0};
  std::atomic<std::uint64_t> ops_failed{0};
  std::atomic<std::uint64_t> batches{0};
  std::atomic<std::uint64_t> ops_fused{0};            // ops that ran inside fused kernels
  std::atomic<std::uint64_t> fused_kernels{0};        // fused kernels launched
  std::atomic<std::uint64_t> plan_cache_hits{0};      // fused kernels found compiled
  std::atomic<std::uint64_t> plan_cache_misses{0};    // ... and compiled first
  std::atomic<std::uint64_t> peer_copies{0};          // uploads copied from a device of the same memory
  std::atomic<std::uint64_t> overlapped_kernels{0};   // kernels run as tasks (AsyncKernels)
  std::atomic<std::uint64_t> plans_replayed{0};       // batches run with a recorded plan (PlanCache)
  std::atomic<std::uint64_t> passes_replayed{0};      // recorded passes run (RecordedPass)
  std::atomic<std::uint64_t> ops_decomposed{0};       // ops the device lacks, rewritten (ops/decompositions.h)
  std::atomic<std::uint64_t> kernels_precompiled{0};  // kernels compiled ahead of their batch, several at once
};

class Executor {
 public:
  explicit Executor(DeviceBackend& device);
  ~Executor();

  // Plans the batch (fusion) and runs it in order.
  void run_batch(std::span<OpIr> ops);
  const ExecutorCounters& counters() const { return counters_; }
  DeviceBackend& device() { return device_; }

 private:
  struct Slot {
    BufferPtr buffer;
    std::exception_ptr error;         // set when the op that makes this entity (or one before it) failed
    Checks checks;                    // deferred checks of the ops it was computed from, until read
    AsyncKernel* producer = nullptr;  // the task that computes `buffer`, while it is pending
  };

  // A new plan's kernels that the device compiles slowly and has not compiled, compiled before
  // the batch runs, several at once (DeviceBackend::precompile_fused); its groups whose kernels
  // are compiled get them.
  void precompile(Plan& plan, std::span<const OpIr> ops);
  void run_one(OpIr& op);
  void run_fused(FusedGroup& group, std::span<OpIr> batch);
  const CompiledKernel& compiled(FusedGroup& group);
  const CompiledKernel& compiled(const FusedExpr& expr);
  void run_compute(OpIr& op);
  void run_read(OpIr& op);
  void run_recorded(OpIr& op);
  void fail_outputs(std::span<const TensorIr> outputs, std::exception_ptr error);
  // `ops` with every op the device does not run natively (its capabilities) rewritten by the
  // decomposition rules, moved into `into`, which it returns; `ops` itself (nothing moved) where
  // the device runs them all.
  std::span<OpIr> native_ops(std::span<OpIr> ops, std::vector<OpIr>& into);
  void decompose_into(const OpIr& op, std::vector<OpIr>& into, int depth);
  Slot* find(EntityId id);
  // Overlap (see the top): whether this batch's kernels become tasks; a pending task's record,
  // its dependencies taken from the slots it reads; and running the pending tasks, after which
  // the failed ones' outputs hold their errors.
  bool overlap_batch(std::span<const OpIr> ops) const;
  AsyncKernel& defer_kernel(const char* name, std::span<Slot* const> inputs, std::span<const BufferPtr> outputs,
                            std::function<void()> run);
  void run_deferred();

  DeviceBackend& device_;
  std::unordered_map<EntityId, Slot> slots_;
  ExecutorCounters counters_;
  FusionPlanner planner_;
  bool overlapping_ = false;  // this batch's kernels are deferred into async_
  AsyncKernels async_;
  PlanCache plans_;
  std::vector<OpIr> decomposed_;  // this batch's messages after decomposition, while it runs
  // Ids of the entities decompositions make, a range of their own: the engine counts from 1.
  EntityId next_internal_id_ = EntityId{1} << 62;
  std::unordered_map<std::string, std::shared_ptr<CompiledKernel>> kernel_cache_;
  std::unordered_set<std::string> precompiled_;  // structure keys already handed to precompile_fused
  struct FusedScratch {                          // run_fused's working vectors, kept to keep their capacity
    std::vector<TensorIr> in_meta, out_meta;     // an anchored group's buffers (fused_arg_tensors)
    std::vector<Slot*> in_slots;
    std::vector<Buffer*> in, out;
    std::vector<BufferPtr> out_buffers;
    std::vector<char> lent;  // inputs whose buffer an output took
  } fused_scratch_;
};

}  // namespace kiln
