// MemoryPool on its own: size classes, reuse of freed blocks, statistics, the limit.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "kiln/memory/memory.h"

namespace kiln {
namespace {

class CountingAllocator final : public RawAllocator {
 public:
  explicit CountingAllocator(int* live) : live_(live) {}
  Block allocate(std::size_t bytes) override {
    ++*live_;
    return Block{std::malloc(bytes), 0, bytes};
  }
  void release(const Block& b) override {
    --*live_;
    std::free(b.ptr);
  }

 private:
  int* live_;
};

TEST(MemoryPool, SizeClassesBoundWaste) {
  EXPECT_EQ(MemoryPool::size_class(0), 0u);
  EXPECT_EQ(MemoryPool::size_class(1), 256u);
  EXPECT_EQ(MemoryPool::size_class(300), 512u);
  EXPECT_EQ(MemoryPool::size_class(4096), 4096u);
  for (std::size_t n : {4097ul, 10000ul, 1ul << 20, (1ul << 26) + 3, 123456789ul}) {
    const std::size_t c = MemoryPool::size_class(n);
    EXPECT_GE(c, n);
    EXPECT_LE(c, n + n / 8) << n;
  }
  EXPECT_EQ(MemoryPool::size_class(64ul << 20), 64ul << 20);
}

TEST(MemoryPool, ReusesFreedBlocksAndCountsThem) {
  int live = 0;
  MemoryPool pool(std::make_unique<CountingAllocator>(&live));
  { BufferPtr a = pool.allocate(1000); EXPECT_EQ(live, 1); }
  MemoryStats s = pool.stats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.bytes_reserved, 1024u);
  BufferPtr b = pool.allocate(900);  // same class: served from the pool
  EXPECT_EQ(live, 1);
  s = pool.stats();
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(s.served_from_pool, 1u);
  EXPECT_EQ(s.bytes_in_use, 1024u);
  EXPECT_EQ(s.peak_in_use, 1024u);
  BufferPtr c = pool.allocate(1 << 20);
  EXPECT_EQ(pool.stats().peak_in_use, 1024u + (1u << 20));
  c.reset();
  pool.release_cached();
  EXPECT_EQ(live, 1);
  EXPECT_EQ(pool.stats().bytes_reserved, 1024u);
}

TEST(MemoryPool, LimitFailsWithOutOfMemory) {
  int live = 0;
  MemoryPool pool(std::make_unique<CountingAllocator>(&live));
  pool.set_limit(1 << 20);
  BufferPtr a = pool.allocate(512 << 10);
  EXPECT_THROW(pool.allocate(768 << 10), OutOfMemory);
  a.reset();
  // The cached block is given back to make room.
  BufferPtr b = pool.allocate(768 << 10);
  EXPECT_EQ(live, 1);
}

// An allocator that, inside each allocate(), has another thread read the pool's statistics (they
// take the pool's lock), and fails its first allocation as a full device would. A Vulkan
// allocator out of memory waits for its device, which drops buffers of other pools: the pool
// must not hold its lock across the call, or two streams could wait on each other.
class ProbingAllocator final : public RawAllocator {
 public:
  MemoryPool* pool = nullptr;
  std::vector<bool> pool_lock_was_free;
  std::vector<std::future<void>> probes;

  Block allocate(std::size_t bytes) override {
    auto done = std::make_shared<std::promise<void>>();
    probes.push_back(done->get_future());
    std::thread([p = pool, done] {
      (void)p->stats();
      done->set_value();
    }).detach();
    pool_lock_was_free.push_back(probes.back().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    if (pool_lock_was_free.size() == 1) throw OutOfMemory(bytes);
    return Block{std::malloc(bytes), 0, bytes};
  }
  void release(const Block& b) override { std::free(b.ptr); }
};

TEST(MemoryPool, CallsItsAllocatorWithoutHoldingItsLock) {
  auto owned = std::make_unique<ProbingAllocator>();
  ProbingAllocator& probing = *owned;
  MemoryPool pool(std::move(owned));
  probing.pool = &pool;
  { BufferPtr cached = pool.allocate(256); }  // fails once (released cache, retried), then cached
  BufferPtr b = pool.allocate(1 << 20);
  for (auto& f : probing.probes) f.wait();  // no probe outlives the pool
  EXPECT_EQ(probing.pool_lock_was_free, (std::vector<bool>{true, true, true}));
  EXPECT_EQ(pool.stats().bytes_reserved, 256u + (1u << 20));
}

TEST(MemoryPool, ZeroBytesNeedNoBlock) {
  int live = 0;
  MemoryPool pool(std::make_unique<CountingAllocator>(&live));
  BufferPtr z = pool.allocate(0);
  EXPECT_EQ(z->data(), nullptr);
  EXPECT_EQ(live, 0);
}

// What a device derives from a buffer's contents (a packed weight matrix) lives while they do:
// replaced by set_derived, gone with contents_replaced() (the executor's in-place reuse) and
// with the buffer; readers on other threads keep the copy they hold.
struct Derived final : BufferDerived {
  explicit Derived(int v) : value(v) {}
  int value;
};

TEST(Buffer, DerivedDataLivesAsLongAsTheContents) {
  int live = 0;
  MemoryPool pool(std::make_unique<CountingAllocator>(&live));
  BufferPtr b = pool.allocate(1024);
  EXPECT_EQ(b->derived(), nullptr);
  auto first = std::make_shared<const Derived>(1);
  std::weak_ptr<const Derived> first_seen = first;
  b->set_derived(std::move(first));
  const std::shared_ptr<const BufferDerived> held = b->derived();
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(dynamic_cast<const Derived&>(*held).value, 1);
  b->contents_replaced();
  EXPECT_EQ(b->derived(), nullptr);
  EXPECT_FALSE(first_seen.expired());  // a reader's copy stays valid
  EXPECT_EQ(dynamic_cast<const Derived&>(*held).value, 1);

  auto second = std::make_shared<const Derived>(2);
  std::weak_ptr<const Derived> second_seen = second;
  b->set_derived(std::move(second));
  b.reset();  // the buffer goes, and its derived data with it
  EXPECT_TRUE(second_seen.expired());
}

TEST(Buffer, DerivedDataFromManyThreads) {
  int live = 0;
  MemoryPool pool(std::make_unique<CountingAllocator>(&live));
  BufferPtr b = pool.allocate(1024);
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        if (i % 2 == t % 2) {
          b->set_derived(std::make_shared<const Derived>(t));
        } else if (const auto d = b->derived()) {
          const int v = dynamic_cast<const Derived&>(*d).value;
          bad[t] += v < 0 || v > 3;
        }
        if (i % 97 == 0) b->contents_replaced();
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace kiln
