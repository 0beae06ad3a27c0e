// What the probes (bench/probes/) use to run work with no engine: a thread pinned to a core, and
// a spin barrier between such threads (sense by generation; never sleeps).
#pragma once
#include <pthread.h>
#include <sched.h>

#include <atomic>

namespace kiln::probe {

inline void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void arrive_and_wait() {
    const unsigned gen = gen_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == count_) {
      arrived_.store(0, std::memory_order_relaxed);
      gen_.fetch_add(1, std::memory_order_release);
      return;
    }
    while (gen_.load(std::memory_order_acquire) == gen) __builtin_ia32_pause();
  }

 private:
  const int count_;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<unsigned> gen_{0};
};

}  // namespace kiln::probe
