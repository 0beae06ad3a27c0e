// devices/: the one interface every device implements — memory, host transfers, running an op,
// synchronizing — and its implementations (cpu/, vulkan/). Nothing outside devices/ names
// a BLAS or Vulkan type. Kernels receive the op message and one buffer per input and output.
#pragma once
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/devices/capabilities.h"
#include "kiln/memory/memory.h"
#include "kiln/ops/fused_expr.h"
#include "kiln/ops/ir.h"

namespace kiln {

struct DeviceInfo {
  std::string name;                // "cpu", "vulkan:0 (NVIDIA H100)"
  std::string kind;                // "cpu", "vulkan"
  std::string type;                // "cpu"; a GPU's "discrete", "integrated", "virtual", "software" or "other"
  std::uint64_t memory_bytes = 0;  // its own memory: a GPU's largest device-local heap; the host's RAM
  // Its work runs on the host's own cores (the CPU; a software GPU such as lavapipe): a thread
  // waiting for it should sleep, not poll, or it takes time from the work.
  bool on_host_cores = false;
  // Its kernels may run on several threads at once (the CPU's are plain functions of their
  // buffers): the executor then runs independent work of different submitting threads side by
  // side (scheduler/async_kernels.h). Such a device never returns a DeferredCheck.
  bool concurrent_kernels = false;
};

// Whether an op failed, where only the device can tell once it has run the op (a GPU kernel
// that finds an index out of range). Waiting for the device right after the op would make every
// such op a full stop; instead the executor keeps the check beside every value computed from
// the op's outputs and resolves it when one of them is read, after the device has caught up.
class DeferredCheck {
 public:
  virtual ~DeferredCheck() = default;
  // The op's error, or null when it succeeded. Called once, after the device finished the op.
  virtual std::exception_ptr resolve() = 0;
  // An input whose buffer resolve() reads (to name the bad value): the executor keeps it alive
  // and unchanged (no later op takes it in place) until the check is resolved. -1: none.
  int keep_input = -1;
  // The outputs whose values the failure reaches (bit o for output o; outputs from 64 on are
  // always reached): a fused kernel's outputs that do not depend on the failing node are not.
  std::uint64_t outputs = ~std::uint64_t{0};
};

// The buffers an op runs on, in the order of op.inputs and op.outputs. An output may be the
// same buffer as an input (in-place reuse); kernels of ops marked inplace_ok must allow that.
// A kernel whose failure only shows once the device has run it sets *deferred (when the
// caller gives it somewhere to put one; without, it must wait and throw).
struct KernelArgs {
  std::span<Buffer* const> inputs;
  std::span<Buffer* const> outputs;
  std::unique_ptr<DeferredCheck>* deferred = nullptr;
};

// A device's compiled form of a fused expression (CPU: a program of kernel calls; Vulkan: a
// pipeline). The executor caches them by FusedExpr::structure_key().
class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual const DeviceInfo& info() const = 0;
  // What the device runs natively (devices/capabilities.h), filled in by its constructor. The
  // executor rewrites what it lacks (ops/decompositions.h) before it plans a batch.
  const DeviceCapabilities& capabilities() const { return capabilities_; }
  // Whether tensors of dtype t can live on this device (checked at submission). Every device
  // has f32, i64 and bool; f16 and bf16 only some Vulkan devices.
  bool supports(DType t) const { return capabilities_.dtypes.has(t); }
  // Replaces the capabilities: tests withhold one to see the decomposition rules take over.
  // Only between batches (after a sync): the executor reads them while it runs one.
  void set_capabilities(const DeviceCapabilities& c) { capabilities_ = c; }
  virtual MemoryPool& memory() = 0;
  virtual void write(Buffer& dst, const void* src, std::size_t bytes) = 0;
  virtual void read(const Buffer& src, void* dst, std::size_t bytes) = 0;
  // Runs one op; throws (kiln::Error, OutOfMemory) on failure.
  virtual void run(const OpIr& op, const KernelArgs& args) = 0;
  // Compiles the structure of `expr` (its scalar values and sizes may change between runs).
  virtual std::shared_ptr<CompiledKernel> compile_fused(const FusedExpr& expr) = 0;
  // Whether compiling a kernel costs enough to do ahead (a GPU: GLSL to SPIR-V, then the
  // driver's compile, milliseconds each), and that: the kernels of `exprs` (fused expressions and
  // elementwise ops as one-node expressions, none anchored) that the next batch will ask
  // compile_fused for, several at once, so that a new model's first step waits for the longest
  // compile rather than the sum of them. The CPU's fused programs cost microseconds: it does
  // neither.
  virtual bool compiles_kernels() const { return false; }
  virtual void precompile_fused(std::span<const FusedExpr> exprs) { (void)exprs; }
  // Runs a compiled expression: args.inputs follow expr.inputs, args.outputs expr.outputs; an
  // output may share its buffer with an input of the same shape and dtype.
  virtual void run_fused(const CompiledKernel& kernel, const FusedExpr& expr, const KernelArgs& args) = 0;
  // Waits for everything this device has been given.
  virtual void synchronize() = 0;
  // The executor finished a batch: start work that is only recorded (Vulkan submits its
  // command buffer), without waiting for it.
  virtual void flush() {}
  // Nanoseconds the device has spent on completed work, by its own clock (Vulkan timestamps);
  // 0 where it does not measure (the CPU: its kernels run on the calling threads).
  virtual std::uint64_t busy_ns() const { return 0; }
  // Times the host has waited for everything the device had been given (EngineCounters).
  virtual std::uint64_t full_waits() const { return 0; }
  // Reads and uploads that went through a staging buffer and a copy on the device
  // (EngineCounters::staged_transfers); 0 where the host reaches the device's memory.
  virtual std::uint64_t staged_transfers() const { return 0; }
  // Weight matrices packed for small products (EngineCounters::weights_packed).
  virtual std::uint64_t weights_packed() const { return 0; }
  // Turns that measuring on or off (set_device_timing); a no-op where nothing is measured.
  virtual void set_timing(bool) {}
  // Devices whose buffers are one memory (the streams of a GPU) give the same non-null key;
  // kiln::to between them copies buffer to buffer on the device (copy_from_peer).
  virtual const void* memory_domain() const { return nullptr; }
  // Copies `bytes` of `src`, a buffer of another device of this memory domain whose writes have
  // completed, into `dst`. `src` stays alive (through `keep`, which owns it) until the copy has run.
  virtual void copy_from_peer(const Buffer& src, Buffer& dst, std::size_t bytes, std::shared_ptr<void> keep) {
    throw Error("to", info().name + " shares memory with no other device");
  }

 protected:
  DeviceCapabilities capabilities_;
};

std::unique_ptr<DeviceBackend> make_cpu_device();
// One backend per usable Vulkan device and stream, best first (discrete GPUs, then integrated,
// then software); none when KILN_VULKAN=0, when there is no driver, or when built without
// Vulkan. `streams_per_gpu`: 1 to kMaxGpuStreams, or 0 for KILN_VULKAN_QUEUES (else 1).
inline constexpr std::uint32_t kMaxGpuStreams = 64;
std::vector<std::unique_ptr<DeviceBackend>> make_vulkan_devices(std::uint32_t streams_per_gpu = 0);

}  // namespace kiln
