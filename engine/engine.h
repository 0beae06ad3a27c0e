// The engine's public controls: waiting on a device, its memory statistics and limits, and the
// scheduler's counters. The engine itself (engine/runtime.h) is created on first use.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "kiln/engine/tensor.h"
#include "kiln/memory/memory.h"

namespace kiln {

// Scheduler and fusion counters of one device, since the engine started.
struct EngineCounters {
  std::uint64_t ops_submitted = 0;
  std::uint64_t ops_run = 0;
  std::uint64_t kernels_launched = 0;
  std::uint64_t inplace_reuses = 0;
  std::uint64_t ops_failed = 0;
  std::uint64_t batches = 0;
  std::uint64_t ops_fused = 0;          // ops that ran inside fused kernels
  std::uint64_t fused_kernels = 0;      // fused kernels launched
  std::uint64_t plan_cache_hits = 0;    // fused kernels reused from the cache (same structure)
  std::uint64_t plan_cache_misses = 0;  // fused kernels compiled
  // Tensors that kiln::to brought here from a device of the same memory (another stream of the
  // GPU) by a copy on the device, not through the host.
  std::uint64_t peer_copies = 0;
  // Kernels that ran as tasks beside other submitting threads' kernels (set_overlap).
  std::uint64_t overlapped_kernels = 0;
  // Nanoseconds the device spent on completed work, timed by the device itself (Vulkan
  // timestamps around each submission: free of host-side noise), while device timing is on
  // (set_device_timing); 0 on the CPU.
  std::uint64_t device_busy_ns = 0;
  // Times the host waited until the device had finished everything it had been given (reads,
  // syncs, running out of device memory); 0 on the CPU, whose kernels run on the threads that
  // submit them. A loop that should run ahead of the GPU shows its stalls here.
  std::uint64_t device_waits = 0;
  // Reads and uploads between the host and the device that went through a staging buffer and a
  // copy on the device. 0 on the CPU, and on a GPU whose memory is the host's (an integrated GPU,
  // lavapipe), where the host copies straight into and out of the tensor's mapped memory (an
  // upload while the device still has work in flight excepted: it is staged).
  std::uint64_t staged_transfers = 0;
  // Weights the CPU packed and keeps beside their buffers: matrices for products of a few rows
  // and convolution weights (the direct kernels' packing, Winograd's transformed weights), each
  // weight of a served model once, on its second request or batch, then never again while it
  // lives (see the README's Serving). 0 on a GPU.
  std::uint64_t weights_packed = 0;
  // Batches that ran with the plan of an earlier batch of the same structure (a model's
  // requests or training steps, where only the tensors are new) instead of being planned again.
  std::uint64_t plans_replayed = 0;
  // Replays of recorded forward passes (RecordedPass) that ran.
  std::uint64_t passes_replayed = 0;
  // Ops the device does not run natively (a transposed operand its matmul cannot read in
  // place, an op without a kernel of its own) that ran as the ops of a decomposition rule.
  std::uint64_t ops_decomposed = 0;
  // Kernels a GPU compiled ahead of the batch that needed them, several at once (a new model's
  // first step, a new structure): fused expressions and elementwise ops seen for the first time.
  std::uint64_t kernels_precompiled = 0;
  // Reads and syncs that, with small work pending on the CPU (set_reader_batch_budget), stepped
  // the stream on their own thread as they were submitted instead of waking a scheduler thread
  // (if a scheduler thread was mid-step, that thread ran their batch).
  std::uint64_t batches_run_by_readers = 0;
  // Flow control (set_flow_control): submissions held back because the stream was at its
  // bound, and the time they waited, summed over the threads that waited.
  std::uint64_t held_back = 0;
  std::uint64_t held_back_ns = 0;
  // Now: messages submitted to the device and not yet run, and the bytes of their outputs.
  std::uint64_t in_flight_ops = 0;
  std::uint64_t in_flight_bytes = 0;
};

// Flow control. Submitting an op never waits for the device, but each device's stream bounds
// the work in flight: ops submitted and not yet run, and the bytes of their outputs. A thread
// that would pass either bound waits inside the op call until the device has caught up (or, with
// WhenFull::error, gets a kiln::Error naming the op and the stream), so a loop runs a bounded
// distance ahead of its device and what it queued (batches, activations) stays bounded. Reads,
// syncs and the release of tensors are never held back. A bound of 0 turns that measure off.
// Defaults: 4096 ops, 1 GiB; also KILN_MAX_IN_FLIGHT_OPS, KILN_MAX_IN_FLIGHT_MB and
// KILN_WHEN_FULL=error. Process-wide: every device's stream has its own bound of this size.
enum class WhenFull { wait, error };
struct FlowControlOptions {
  std::uint64_t max_ops = 4096;
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
  WhenFull when_full = WhenFull::wait;
};
void set_flow_control(const FlowControlOptions& options);
FlowControlOptions flow_control();

// Fusion of elementwise chains (on by default; KILN_FUSION=0 turns it off). Results are the
// same either way, bit for bit on the CPU.
void set_fusion(bool enabled);
bool fusion_enabled();
// With fusion on, submitted ops wait until a read, a sync, or this many pending messages
// (KILN_FLUSH_THRESHOLD; default 512), so that whole chains are planned together.
void set_flush_threshold(std::size_t messages);
std::size_t flush_threshold();

// On the CPU, independent work that different threads submit runs side by side: each thread's
// kernels wait only for the kernels whose results they read, and share the cores with the
// others' (on by default; KILN_OVERLAP=0 runs every kernel in submission order, one at a time).
// Results are the same either way, bit for bit.
void set_overlap(bool enabled);
bool overlap_enabled();

// On the CPU, a read or sync runs the work pending before it on the thread that submits it,
// before returning its future, when the device's last batch took at most `budget` and about as
// many ops wait now: a service's request or a small step then needs no hand-over to a
// scheduler thread and no wake-up. Anything larger still runs on the scheduler's thread while
// the caller goes on. Default 500 us (KILN_READER_BATCH_US); 0 turns it off.
void set_reader_batch_budget(std::chrono::microseconds budget);

// Completes when every op submitted to `device` before this call has run (same as
// device.sync()). No default device: a bare sync() would clash with POSIX sync().
Future<void> sync(Device device);
MemoryStats memory_stats(Device device = Device::cpu());
void reset_peak_memory(Device device = Device::cpu());
// Caps the bytes the device's pool may reserve (0: no cap); allocations over it fail through
// the futures of the tensors they were for.
void set_memory_limit(Device device, std::size_t bytes);
// Gives the memory the device's pool caches (blocks of dropped tensors) back to the driver or the
// system, in stream order: it waits for the work submitted before it, and reports that work's
// errors as sync does. On a GPU whose streams have their own pools (set_gpu_streams), memory
// one stream gives back is there for the others.
void release_cached_memory(Device device = Device::cpu());
EngineCounters counters(Device device = Device::cpu());
// Whether the device times its own work for counters().device_busy_ns. Off by default
// (KILN_DEVICE_TIME=1 turns it on for every device): the timestamps cost a few microseconds a
// submission (H200: a 64 MiB map's wall time 62-64 us without, 66-70 with).
void set_device_timing(Device device, bool enabled);
// How many streams each GPU opens: each is a kiln device of its own (vulkan:0, vulkan:1, ...)
// with its own queue where the GPU's compute family has enough, so that threads working on
// separate modules do not queue behind each other. Call it before the engine starts (before the
// first op, devices() or any other call that needs a device); after that it is an error, as is a
// count outside 1..64. Without it: KILN_VULKAN_QUEUES, else 1.
void set_gpu_streams(std::uint32_t per_gpu);

// Every device, best first: the CPU, then Vulkan devices (discrete, integrated, virtual, then
// software ones such as Mesa's lavapipe), so Device::vulkan(0) is the best GPU.
std::vector<Device> devices();
std::string device_name(Device device);
// What a device is, for choosing one.
struct DeviceProperties {
  Device device;
  std::string name;                // "vulkan:0 (NVIDIA H200)"
  std::string type;                // "cpu"; a GPU's "discrete", "integrated", "virtual", "software" or "other"
  std::uint64_t memory_bytes = 0;  // its own memory: a GPU's largest device-local heap; the host's RAM
};
DeviceProperties device_properties(Device device);
// Where a model runs by default: the best GPU that is not a software one, else the CPU.
Device best_device();

}  // namespace kiln
