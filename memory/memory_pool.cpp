#include <algorithm>
#include <bit>
#include <utility>

#include "kiln/memory/memory.h"

namespace kiln {

Buffer::~Buffer() {
  if (block_.bytes) pool_->give_back(block_);
}

std::shared_ptr<const BufferDerived> Buffer::derived() const {
  const std::lock_guard lock(derived_mutex_);
  return derived_;
}

void Buffer::set_derived(std::shared_ptr<const BufferDerived> d) {
  std::shared_ptr<const BufferDerived> old;  // declared first: destroyed after the lock is let go
  const std::lock_guard lock(derived_mutex_);
  old = std::exchange(derived_, std::move(d));
}

MemoryPool::MemoryPool(std::unique_ptr<RawAllocator> allocator) : allocator_(std::move(allocator)) {}

MemoryPool::~MemoryPool() { release_cached(); }

std::size_t MemoryPool::size_class(std::size_t bytes) {
  if (bytes == 0) return 0;
  constexpr std::size_t kMinClass = 256;
  if (bytes <= 4096) return std::max(kMinClass, std::bit_ceil(bytes));
  // Eight classes per power of two: waste stays under 12.5% and blocks still get reused.
  const std::size_t pow2 = std::bit_floor(bytes);
  const std::size_t step = pow2 / 8;
  return (bytes + step - 1) / step * step;
}

BufferPtr MemoryPool::allocate(std::size_t bytes) {
  const std::size_t cls = size_class(bytes);
  if (cls == 0) return std::make_shared<Buffer>(this, Block{}, 0);
  Block block;
  {
    std::lock_guard lock(mutex_);
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      ++stats_.served_from_pool;
      count_allocation_locked(cls);
    } else {
      if (limit_ && stats_.bytes_reserved + cls > limit_) release_cached_locked();
      if (limit_ && stats_.bytes_reserved + cls > limit_) throw OutOfMemory(bytes);
    }
  }
  if (block.bytes) return std::make_shared<Buffer>(this, block, bytes);
  // The allocator is called without the pool's lock: out of memory, it may wait for the device
  // to finish, which drops buffers the device's submissions kept alive, among them other pools'
  // (streams of one GPU), whose give-back takes their lock. Holding this one meanwhile could
  // close a cycle with another stream doing the same.
  try {
    block = allocator_->allocate(cls);
  } catch (const OutOfMemory&) {
    // The device is full: give back what the pool caches and try once more.
    release_cached();
    block = allocator_->allocate(cls);
  }
  {
    std::lock_guard lock(mutex_);
    stats_.bytes_reserved += cls;
    stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.bytes_reserved);
    count_allocation_locked(cls);
  }
  return std::make_shared<Buffer>(this, block, bytes);
}

void MemoryPool::count_allocation_locked(std::size_t cls) {
  ++stats_.allocations;
  stats_.bytes_in_use += cls;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.bytes_in_use);
}

void MemoryPool::give_back(const Block& block) {
  std::lock_guard lock(mutex_);
  stats_.bytes_in_use -= block.bytes;
  free_[block.bytes].push_back(block);
}

MemoryStats MemoryPool::stats() const {
  MemoryStats s;
  {
    std::lock_guard lock(mutex_);
    s = stats_;
  }
  // After the pool's lock is let go: a call that only reads need not hold both locks.
  s.bytes_from_device = std::max(s.bytes_reserved, allocator_->held_bytes());
  return s;
}

void MemoryPool::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_in_use = stats_.bytes_in_use;
  stats_.peak_reserved = stats_.bytes_reserved;
}

void MemoryPool::release_cached() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void MemoryPool::release_unused() {
  release_cached();
  allocator_->trim();
}

void MemoryPool::release_cached_locked() {
  for (auto& [cls, blocks] : free_) {
    for (const Block& b : blocks) {
      allocator_->release(b);
      stats_.bytes_reserved -= b.bytes;
    }
    blocks.clear();
  }
}

void MemoryPool::set_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  limit_ = bytes;
}

}  // namespace kiln
