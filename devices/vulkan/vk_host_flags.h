// devices/vulkan private: small records in host-visible memory that kernels write to report
// what only they can see (an index out of range, and where), read by the host once the device
// has finished the kernel — without a copy command and without waiting right after the op.
//
// A record is zeroed (its position word set to all ones) by the host when it is handed out. A
// released record is handed out again only after the whole device has been idle since
// (recycle(), called after each wait for everything): until then a kernel that uses it may
// still be running, and must not mark the record of a later op.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/devices/vulkan/vk_memory.h"

namespace kiln::vk {

class HostFlags {
 public:
  // What a kernel writes: raised = 1, and the lowest position it found (atomicMin).
  struct Record {
    std::uint32_t raised;
    std::uint32_t position;
    std::uint32_t unused[2];
  };
  static constexpr std::uint32_t kRecordsPerBlock = 1024;

  explicit HostFlags(const Context& ctx) : ctx_(ctx) {}

  // A zeroed record: its index (for release), where the host reads it, where kernels write it.
  struct Handle {
    std::uint32_t index = 0;
    const volatile Record* host = nullptr;
    VkDeviceAddress address = 0;
  };
  Handle take();
  void release(std::uint32_t index) { released_.push_back(index); }
  // The device has been idle since every release so far: those records may be handed out again.
  void recycle();

 private:
  const Context& ctx_;
  std::vector<BufferAllocation> blocks_;
  std::vector<std::uint32_t> free_, released_;
};

}  // namespace kiln::vk
