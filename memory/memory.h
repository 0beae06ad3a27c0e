// memory/: the pooled memory manager of one device. A device supplies a RawAllocator (aligned
// host memory for the CPU, sub-allocated device memory for Vulkan); the MemoryPool rounds each
// request up to a size class, serves it from freed blocks of that class when it can, and keeps
// statistics. Buffers are RAII: dropping the last reference returns the block to the pool.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace kiln {

// A block of device memory: `ptr` is a host address on the CPU, an opaque handle elsewhere.
struct Block {
  void* ptr = nullptr;
  std::uint64_t offset = 0;
  std::size_t bytes = 0;
};

class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  virtual Block allocate(std::size_t bytes) = 0;  // throws OutOfMemory
  virtual void release(const Block& block) = 0;
  // Bytes held from the driver or the system; 0 where each block is its own allocation (the
  // pool then reports its bytes_reserved).
  virtual std::size_t held_bytes() const { return 0; }
  // Gives back to the driver what no block uses. Only the device's scheduler thread calls it:
  // an allocator may first wait for work that device has submitted.
  virtual void trim() {}
};

// Thrown when a device (or the pool's limit) cannot serve an allocation.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::size_t requested) : requested_(requested) {
    message_ = "out of memory allocating " + std::to_string(requested) + " bytes";
  }
  const char* what() const noexcept override { return message_.c_str(); }
  std::size_t requested() const { return requested_; }

 private:
  std::size_t requested_;
  std::string message_;
};

struct MemoryStats {
  std::size_t bytes_in_use = 0;    // held by live buffers (size-class rounded)
  std::size_t bytes_reserved = 0;  // in use plus cached in the pool
  std::size_t peak_in_use = 0;
  std::size_t peak_reserved = 0;
  std::uint64_t allocations = 0;       // buffers handed out
  std::uint64_t served_from_pool = 0;  // ... of which reused a cached block
  // Held from the driver or the system: bytes_reserved, or more where the device sub-allocates
  // blocks from larger chunks (Vulkan: chunks of 64 MiB) that a freed block leaves in place.
  std::size_t bytes_from_device = 0;
};

class MemoryPool;

// What a device derives from a buffer's contents and keeps beside them (the CPU: a weight matrix
// packed for the small products of a served model, devices/cpu/packed_weights.h). It lives as
// long as the contents: it goes with the buffer, and when the executor reuses the buffer in place
// for another tensor's values.
class BufferDerived {
 public:
  virtual ~BufferDerived() = default;
};

// One buffer handed out by a pool; returns its block when destroyed.
class Buffer {
 public:
  Buffer(MemoryPool* pool, Block block, std::size_t bytes) : pool_(pool), block_(block), bytes_(bytes) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return block_.ptr; }
  const Block& block() const { return block_; }
  std::size_t bytes() const { return bytes_; }  // as requested

  // The derived data (null when none); set_derived replaces it. From any thread: kernels of two
  // streams may read one weight at once.
  std::shared_ptr<const BufferDerived> derived() const;
  void set_derived(std::shared_ptr<const BufferDerived> d);
  // The buffer now holds another tensor's values (the executor's in-place reuse): what was
  // derived from the old ones goes. A tensor's values never change otherwise (entities are
  // immutable; only a buffer no one else holds is reused).
  void contents_replaced() { set_derived(nullptr); }

 private:
  MemoryPool* pool_;
  Block block_;  // block_.bytes is the size class
  std::size_t bytes_;
  mutable std::mutex derived_mutex_;
  std::shared_ptr<const BufferDerived> derived_;
};

using BufferPtr = std::shared_ptr<Buffer>;

class MemoryPool {
 public:
  explicit MemoryPool(std::unique_ptr<RawAllocator> allocator);
  ~MemoryPool();

  BufferPtr allocate(std::size_t bytes);  // throws OutOfMemory
  MemoryStats stats() const;
  void reset_peak();
  // Frees the cached blocks back to the device's allocator (release_unused() in the executor
  // also trims the allocator).
  void release_cached();
  // release_cached(), then the allocator's trim(): from the device's scheduler thread only.
  void release_unused();
  // Caps bytes_reserved; 0 means no limit. An allocation over the cap first drops the cache.
  void set_limit(std::size_t bytes);

  // The size class a request is rounded up to: at most 1/8 waste above 4 KiB.
  static std::size_t size_class(std::size_t bytes);

 private:
  friend class Buffer;
  void give_back(const Block& block);
  void release_cached_locked();
  void count_allocation_locked(std::size_t cls);  // a block handed out: stats

  std::unique_ptr<RawAllocator> allocator_;
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<Block>> free_;
  MemoryStats stats_;
  std::size_t limit_ = 0;
};

}  // namespace kiln
