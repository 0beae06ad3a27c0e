#include "kiln/devices/vulkan/vk_host_flags.h"

namespace kiln::vk {

HostFlags::Handle HostFlags::take() {
  if (free_.empty()) {
    const auto first = static_cast<std::uint32_t>(blocks_.size() * kRecordsPerBlock);
    blocks_.push_back(allocate_buffer(ctx_, kRecordsPerBlock * sizeof(Record),
                                      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT));
    for (std::uint32_t i = kRecordsPerBlock; i-- > 0;) free_.push_back(first + i);
  }
  const std::uint32_t index = free_.back();
  free_.pop_back();
  const BufferAllocation& block = blocks_[index / kRecordsPerBlock];
  const std::uint32_t at = index % kRecordsPerBlock;
  auto* record = static_cast<volatile Record*>(block.mapped) + at;
  record->raised = 0;
  record->position = ~0u;
  return Handle{index, record, block.address + at * sizeof(Record)};
}

void HostFlags::recycle() {
  free_.insert(free_.end(), released_.begin(), released_.end());
  released_.clear();
}

}  // namespace kiln::vk
