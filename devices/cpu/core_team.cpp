#include "devices/cpu/core_team.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <mutex>
#include <thread>

namespace kiln::cpu {

namespace {
// How long a member polls for the next job before it sleeps: longer than the gap between the
// kernels of one request, short enough that a spinning member does not keep client threads off
// a busy machine's cores (a 1 ms spin cut concurrent_infer's batches to one request each).
constexpr auto kSpin = std::chrono::microseconds(30);
// Polls between clock reads (a pause is 10-140 cycles, depending on the CPU).
constexpr int kPollsPerClockRead = 64;
}  // namespace

struct CoreTeam::State {
  std::mutex busy;                       // one job at a time; try_lock, never waited on
  std::atomic<std::uint64_t> job{0};     // bumped for each job; members wait for a change
  std::atomic<int> remaining{0};         // parts of the current job not finished
  std::atomic<int> sleeping{0};          // members blocked in job.wait()
  CoreTeam::Job fn;  // the current job (published by `job`)
  // The last job whose part i someone took. A member that has not started its part when the
  // caller is done with part 0 (descheduled on a busy machine, asleep) loses it to the caller:
  // waiting for it would cost an OS time slice.
  std::atomic<std::uint64_t> claimed[8] = {};

  // Takes part i of job j unless someone has; job ids only grow, so a late member's claim of an
  // old job fails.
  bool claim(int i, std::uint64_t j) {
    std::uint64_t v = claimed[i].load(std::memory_order_acquire);
    while (v < j)
      if (claimed[i].compare_exchange_weak(v, j, std::memory_order_acq_rel)) return true;
    return false;
  }
};

CoreTeam& CoreTeam::get() {
  static CoreTeam* team = new CoreTeam(static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u)));
  return *team;
}

CoreTeam::CoreTeam(int size) : state_(new State), size_(size) {
  for (int part = 1; part < size_; ++part) std::thread([this, part] { member_loop(part); }).detach();
}

void CoreTeam::member_loop(int part) {
  State& s = *state_;
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t now = s.job.load(std::memory_order_acquire);
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 1; now == seen; ++i) {
      _mm_pause();
      now = s.job.load(std::memory_order_acquire);
      if (i % kPollsPerClockRead == 0 && std::chrono::steady_clock::now() > spin_until) break;
    }
    if (now == seen) {
      s.sleeping.fetch_add(1, std::memory_order_seq_cst);
      s.job.wait(seen, std::memory_order_acquire);
      s.sleeping.fetch_sub(1, std::memory_order_seq_cst);
      continue;
    }
    seen = now;
    if (!s.claim(part, now)) continue;  // the caller ran it
    s.fn(part);
    s.remaining.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void CoreTeam::run_job(Job fn) {
  State& s = *state_;
  std::unique_lock lock(s.busy, std::try_to_lock);
  if (!lock.owns_lock() || size_ == 1) {
    for (int part = 0; part < size_; ++part) fn(part);
    return;
  }
  s.fn = fn;
  s.remaining.store(size_ - 1, std::memory_order_relaxed);
  const std::uint64_t job = s.job.fetch_add(1, std::memory_order_seq_cst) + 1;
  if (s.sleeping.load(std::memory_order_seq_cst) > 0) s.job.notify_all();
  fn(0);
  for (int part = 1; part < size_; ++part)
    if (s.claim(part, job)) {
      fn(part);
      s.remaining.fetch_sub(1, std::memory_order_acq_rel);
    }
  // Only parts that members have started are left: they finish within a part's time, unless the
  // OS took a member's core, when yielding lets it run.
  const auto spin_until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1; s.remaining.load(std::memory_order_acquire) > 0; ++i) {
    if (i % kPollsPerClockRead != 0 || std::chrono::steady_clock::now() < spin_until) _mm_pause();
    else std::this_thread::yield();
  }
}

}  // namespace kiln::cpu
