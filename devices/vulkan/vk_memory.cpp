#include "kiln/devices/vulkan/vk_memory.h"

#include <algorithm>

#include "kiln/base/log.h"

namespace kiln::vk {

BufferAllocation allocate_buffer(const Context& ctx, std::uint64_t bytes, VkMemoryPropertyFlags required,
                                 VkMemoryPropertyFlags preferred) {
  const VkDevice dev = ctx.device();
  BufferAllocation a;
  a.size = std::max<std::uint64_t>(bytes, 16);
  if (ctx.max_allocation_bytes() && a.size > ctx.max_allocation_bytes()) throw OutOfMemory(bytes);
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = a.size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  if (vkCreateBuffer(dev, &bci, nullptr, &buffer) != VK_SUCCESS) throw OutOfMemory(bytes);
  a.buffer = own(dev, buffer);

  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, buffer, &req);
  const std::uint32_t type = ctx.find_memory_type(req.memoryTypeBits, required, preferred);
  KILN_CHECK(type != UINT32_MAX, "vulkan", "no memory type for a buffer with the required properties");
  VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.pNext = &flags;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  const VkResult r = vkAllocateMemory(dev, &mai, nullptr, &memory);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) throw OutOfMemory(bytes);
  check(r, "vkAllocateMemory");
  a.memory = own(dev, memory);
  check(vkBindBufferMemory(dev, buffer, memory, 0), "vkBindBufferMemory");
  VkBufferDeviceAddressInfo ai{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  ai.buffer = buffer;
  a.address = vkGetBufferDeviceAddress(dev, &ai);
  const VkMemoryPropertyFlags props = ctx.memory_properties().memoryTypes[type].propertyFlags;
  if (props & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) check(vkMapMemory(dev, memory, 0, VK_WHOLE_SIZE, 0, &a.mapped), "vkMapMemory");
  a.coherent = (props & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  return a;
}

DeviceAllocator::DeviceAllocator(const Context& ctx) : ctx_(ctx) {
  alignment_ = std::max<std::uint64_t>(256, ctx.limits().minStorageBufferOffsetAlignment);
  // One memory for host and device (an integrated GPU, a software device): take device-local
  // memory the host can map and cache, so that reads and uploads need no staging copy. Not on a
  // discrete GPU, where such memory is a window over the bus that the host reads slowly.
  const VkPhysicalDeviceType type = ctx.info().type;
  if (type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU || type == VK_PHYSICAL_DEVICE_TYPE_CPU)
    preferred_ = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                 VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  // Small heaps (integrated or software devices) get smaller chunks.
  chunk_bytes_ = std::min<std::uint64_t>(kChunkBytes, std::max<std::uint64_t>(ctx.info().device_local_bytes / 16, 4u << 20));
}

DeviceAllocator::~DeviceAllocator() = default;

bool DeviceAllocator::try_allocate_in(Chunk& c, std::uint64_t bytes, Block& out) {
  for (auto it = c.free.begin(); it != c.free.end(); ++it) {
    if (it->second < bytes) continue;
    const std::uint64_t offset = it->first, left = it->second - bytes;
    c.free.erase(it);
    if (left) c.free.emplace(offset + bytes, left);
    c.used += bytes;
    out = Block{&c, offset, bytes};
    return true;
  }
  return false;
}

Block DeviceAllocator::allocate(std::size_t requested) {
  const std::uint64_t bytes = (std::max<std::uint64_t>(requested, 1) + alignment_ - 1) / alignment_ * alignment_;
  std::unique_lock lock(mutex_);
  Block out;
  for (auto& c : chunks_)
    if (try_allocate_in(*c, bytes, out)) return out;
  const std::uint64_t size = std::max(chunk_bytes_, bytes);
  auto chunk = std::make_unique<Chunk>();
  try {
    chunk->alloc = allocate_buffer(ctx_, size, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, preferred_);
  } catch (const OutOfMemory&) {
    // Give back empty chunks (a big tensor may fit where small ones were) and try once more.
    free_empty_chunks(lock);
    try {
      chunk->alloc = allocate_buffer(ctx_, size, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, preferred_);
    } catch (const OutOfMemory&) {
      throw OutOfMemory(requested);
    }
  }
  if (log_enabled(spdlog::level::debug))
    logger().debug("vulkan: new memory chunk of {} MiB ({} chunks)", size >> 20, chunks_.size() + 1);
  chunk->free.emplace(0, size);
  Chunk& c = *chunk;
  chunks_.push_back(std::move(chunk));
  try_allocate_in(c, bytes, out);
  return out;
}

void DeviceAllocator::release(const Block& block) {
  std::lock_guard lock(mutex_);
  Chunk& c = *static_cast<Chunk*>(block.ptr);
  c.used -= block.bytes;
  auto [it, inserted] = c.free.emplace(block.offset, block.bytes);
  // Coalesce with the next and previous free ranges.
  auto next = std::next(it);
  if (next != c.free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    c.free.erase(next);
  }
  if (it != c.free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      c.free.erase(it);
    }
  }
}

void DeviceAllocator::free_empty_chunks(std::unique_lock<std::mutex>& lock) {
  const bool any_empty = std::any_of(chunks_.begin(), chunks_.end(), [](auto& c) { return c->used == 0; });
  if (!any_empty) return;
  // Unlocked while the device finishes: that drops what its submissions kept alive (buffers of
  // other streams' pools, whose give-back must not wait on this lock). Only this device's
  // scheduler thread allocates here, so the empty chunks stay empty meanwhile.
  lock.unlock();
  if (wait_idle_) wait_idle_();
  lock.lock();
  std::erase_if(chunks_, [](auto& c) { return c->used == 0; });
}

std::size_t DeviceAllocator::held_bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t total = 0;
  for (const auto& c : chunks_) total += c->alloc.size;
  return total;
}

void DeviceAllocator::trim() {
  std::unique_lock lock(mutex_);
  free_empty_chunks(lock);
}

VkBuffer DeviceAllocator::buffer_of(const Block& block) { return static_cast<const Chunk*>(block.ptr)->alloc.buffer.get(); }

VkDeviceAddress DeviceAllocator::address_of(const Block& block) {
  return static_cast<const Chunk*>(block.ptr)->alloc.address + block.offset;
}

std::byte* DeviceAllocator::mapped_of(const Block& block) {
  const BufferAllocation& a = static_cast<const Chunk*>(block.ptr)->alloc;
  return a.mapped != nullptr && a.coherent ? static_cast<std::byte*>(a.mapped) + block.offset : nullptr;
}

}  // namespace kiln::vk
