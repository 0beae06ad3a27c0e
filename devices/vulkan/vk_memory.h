// devices/vulkan private: device memory. DeviceAllocator is the RawAllocator behind a Vulkan
// device's MemoryPool: it sub-allocates tensors from large device-local blocks (64 MiB by
// default, each one VkDeviceMemory bound to one VkBuffer with a device address), first fit
// from a free list with coalescing, every range aligned for storage access. A Block's `ptr` is
// the owning chunk (opaque outside this file) and `offset` the range's offset in its buffer, so
// a kernel sees a tensor as the 64-bit address chunk_address + offset. No vkAllocateMemory per
// tensor. HostBuffer is a mapped host-visible buffer (staging, kernel arguments, error flags).
// Where the device's memory is the host's (an integrated GPU, lavapipe), chunks come from memory
// that is also host-visible, coherent and cached, and stay mapped: reads and uploads then copy
// straight between the tensor and the host, without a staging buffer (VulkanDevice::read/write).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/devices/vulkan/vk_context.h"
#include "kiln/memory/memory.h"

namespace kiln::vk {

// A buffer with memory bound to it and its device address.
struct BufferAllocation {
  Owned<VkDeviceMemory> memory;
  Owned<VkBuffer> buffer;
  VkDeviceAddress address = 0;
  std::uint64_t size = 0;
  void* mapped = nullptr;  // host-visible allocations only
  bool coherent = false;   // host writes and reads need no flush or invalidate
};

// Creates a buffer usable as storage, transfer source/destination and by device address, with
// memory of the given properties (mapped when host-visible). Throws OutOfMemory on failure.
BufferAllocation allocate_buffer(const Context& ctx, std::uint64_t bytes, VkMemoryPropertyFlags required,
                                 VkMemoryPropertyFlags preferred = 0);

class DeviceAllocator final : public RawAllocator {
 public:
  static constexpr std::uint64_t kChunkBytes = 64ull << 20;

  explicit DeviceAllocator(const Context& ctx);
  ~DeviceAllocator() override;

  Block allocate(std::size_t bytes) override;  // throws OutOfMemory
  void release(const Block& block) override;
  std::size_t held_bytes() const override;  // the chunks' sizes
  void trim() override;                      // frees the empty chunks (after wait_idle)

  // Called before empty chunks go back to the driver: waits until no submitted work uses them.
  void set_wait_idle(std::function<void()> wait_idle) { wait_idle_ = std::move(wait_idle); }

  static VkBuffer buffer_of(const Block& block);
  static VkDeviceAddress address_of(const Block& block);
  // The block's bytes as the host sees them, where its chunk's memory is mapped (host-visible,
  // coherent device memory: an integrated GPU's, lavapipe's); null otherwise.
  static std::byte* mapped_of(const Block& block);
  std::uint64_t alignment() const { return alignment_; }

 private:
  struct Chunk {
    BufferAllocation alloc;
    std::map<std::uint64_t, std::uint64_t> free;  // offset -> bytes, coalesced
    std::uint64_t used = 0;
  };
  bool try_allocate_in(Chunk& c, std::uint64_t bytes, Block& out);
  // Gives the empty chunks back to the driver once the device has finished its work (the lock
  // is let go while it waits).
  void free_empty_chunks(std::unique_lock<std::mutex>& lock);

  const Context& ctx_;
  std::uint64_t alignment_ = 256;
  std::uint64_t chunk_bytes_ = kChunkBytes;
  VkMemoryPropertyFlags preferred_ = 0;  // besides DEVICE_LOCAL
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::function<void()> wait_idle_;
};

}  // namespace kiln::vk
