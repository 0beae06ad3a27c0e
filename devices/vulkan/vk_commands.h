// devices/vulkan private: the command stream of one device. Copies and dispatches are recorded
// into a command buffer and submitted in batches (at most kMaxCommands per submission, or when
// the executor finishes a batch, or when the host needs a result); each submission has a fence,
// and nothing waits for the queue to go idle per op. A global memory barrier separates every
// two commands, which orders any dependent pair (kernels then need no barrier bookkeeping).
//
// Host memory that a recorded command reads or writes (staging for uploads and reads, kernel
// argument blocks) comes from host_alloc(): it lives until that submission's fence signals, then
// its blocks are reused, so steady-state work allocates nothing.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "kiln/devices/vulkan/vk_memory.h"

namespace kiln::vk {

// A memory barrier from every earlier compute and transfer write to `dst_access` in `dst_stage`:
// what the stream records before each command, and before the host reads at the end of a
// submission.
void global_barrier(VkCommandBuffer cb, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access);

// Host-visible, mapped memory for one recorded command.
struct HostSlice {
  void* ptr = nullptr;
  VkBuffer buffer = VK_NULL_HANDLE;
  std::uint64_t offset = 0;
  VkDeviceAddress address = 0;
};

class CommandStream {
 public:
  static constexpr std::uint32_t kMaxCommands = 256;  // per submission
  static constexpr std::uint32_t kMaxInFlight = 8;    // submissions before the host waits
  static constexpr std::uint64_t kHostBlockBytes = 4ull << 20;

  // Submits through the queue of stream `stream` of the context (Context::queue_of).
  explicit CommandStream(const Context& ctx, std::uint32_t stream = 0);
  ~CommandStream();  // waits for submitted work
  CommandStream(const CommandStream&) = delete;
  CommandStream& operator=(const CommandStream&) = delete;

  // The command buffer being recorded, with a barrier after the previous command already in it.
  // Call done_command() after recording one command.
  VkCommandBuffer begin_command();
  void done_command();

  // Mapped host memory that stays valid until the work recorded so far has completed.
  HostSlice host_alloc(std::uint64_t bytes, std::uint64_t align = 16);
  // Keeps `object` alive until the work recorded so far has completed (another stream's buffer
  // that a recorded copy reads).
  void retain(std::shared_ptr<void> object) { current().kept.push_back(std::move(object)); }

  // Submits what is recorded; does not wait.
  void submit();
  // Submits and waits for everything; `while_idle` runs once the device is idle, before the
  // finished submissions' staging memory is recycled (a read copies its result out there).
  void finish(const std::function<void()>& while_idle = {});
  // Whether the device has finished everything this stream gave it and nothing is recorded, so
  // that the host may write device memory directly (retires the finished submissions). Never waits.
  bool idle();
  // Throws DeviceLost if the device was lost earlier.
  void check_alive() const;
  // Nanoseconds the device spent on the completed submissions that were timed, by its own
  // clock (timestamps at each submission's start and end; 0 where the queue has none). Each
  // submission starts timing once the work before it has finished, so nothing counts twice.
  std::uint64_t busy_ns() const { return busy_ns_.load(std::memory_order_relaxed); }
  // Calls of finish(): the times the host waited for everything.
  std::uint64_t finishes() const { return finishes_.load(std::memory_order_relaxed); }
  // Whether submissions from the next one on are timed (initially: KILN_DEVICE_TIME=1).
  void set_timing(bool enabled) { timing_.store(enabled, std::memory_order_relaxed); }

 private:
  struct HostBlock {
    BufferAllocation alloc;
    std::uint64_t used = 0;
  };
  struct Frame {
    VkCommandBuffer cb = VK_NULL_HANDLE;
    Owned<VkFence> fence;
    std::vector<std::unique_ptr<HostBlock>> host;
    std::uint32_t commands = 0;
    std::vector<std::shared_ptr<void>> kept;  // retain()
    Owned<VkQueryPool> timestamps;  // [start, end] of the submission, created when first timed
    bool timed = false;             // this submission writes the timestamps
    bool submitted = false;
  };

  Frame& current();
  void retire(std::unique_ptr<Frame> frame);
  void wait(Frame& frame);

  const Context& ctx_;
  const std::uint32_t stream_;
  Owned<VkCommandPool> pool_;
  std::unique_ptr<Frame> recording_;
  std::deque<std::unique_ptr<Frame>> in_flight_;
  std::vector<std::unique_ptr<Frame>> idle_frames_;
  std::vector<std::unique_ptr<HostBlock>> idle_host_;
  bool lost_ = false;
  std::atomic<std::uint64_t> busy_ns_{0};
  std::atomic<std::uint64_t> finishes_{0};
  std::atomic<bool> timing_{false};
};

}  // namespace kiln::vk
