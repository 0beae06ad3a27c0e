#include "kiln/devices/cpu/core_team.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace kiln::cpu {

namespace {
// How long a member polls for the next job with its core to itself: longer than the gap between
// the kernels of one request, short enough that a spinning member does not keep client threads
// off a busy machine's cores (a 1 ms spin cut concurrent_infer's batches to one request each).
constexpr auto kSpin = std::chrono::microseconds(30);
// Polls between clock reads (a pause is 10-140 cycles, depending on the CPU).
constexpr int kPollsPerClockRead = 64;

// After kSpin a member goes on polling, yielding its core between polls (any thread that needs
// the core gets it), until this long after its last job (KILN_CPU_SPIN_US, default 1000; 0:
// sleep after kSpin), and only then sleeps. A member that slept wakes late: on a 2-core VM a
// request of the serving MLP 50-1000 us after the last took 43-85 us, against 32 back to back,
// its first product running on the caller's core alone; with this wait, 31-34 us, and the
// batcher's and eight clients' throughput unchanged (they keep the cores busy). The price is a
// core that polls for up to a millisecond after each job, as OpenMP's and ONNX Runtime's
// spinning threads do.
std::chrono::microseconds yielding_wait() {
  static const std::chrono::microseconds wait = [] {
    const char* env = std::getenv("KILN_CPU_SPIN_US");
    return std::chrono::microseconds(env && *env ? std::max(0L, std::atol(env)) : 1000L);
  }();
  return wait;
}
}  // namespace

struct CoreTeam::State {
  std::mutex busy;                       // one job at a time; try_lock, never waited on
  std::atomic<std::uint64_t> job{0};     // bumped for each job; members wait for a change
  std::atomic<int> remaining{0};         // chunks of the current job not finished
  std::atomic<int> sleeping{0};          // members blocked in job.wait()
  CoreTeam::Job fn;  // the current job (published by `job`)
  // Part i's chunks not yet taken, [front, back), tagged with the job they belong to:
  // job (low 32 bits) << 32 | front << 16 | back. Part i's own thread (the caller for part 0)
  // takes from the front, the others, done with their own, from the back; a claim for another
  // job than the tag's fails, so a late member never takes a newer job's chunk. A thread that
  // has not started (descheduled on a busy machine, asleep) loses its whole part: waiting for it
  // would cost an OS time slice.
  std::atomic<std::uint64_t> chunks[8] = {};

  // Runs a claimed chunk of the current job and counts it done.
  void run(int part, int chunk) {
    fn(part, chunk);
    remaining.fetch_sub(1, std::memory_order_acq_rel);
  }

  static std::uint64_t pack(std::uint64_t job, std::uint64_t front, std::uint64_t back) {
    return (job & 0xffffffffu) << 32 | front << 16 | back;
  }
  // The chunk of part i, job j taken from the front (or the back); -1 when none is left.
  int claim(int i, std::uint64_t j, bool from_back) {
    std::uint64_t v = chunks[i].load(std::memory_order_acquire);
    for (;;) {
      const std::uint64_t front = v >> 16 & 0xffff, back = v & 0xffff;
      if (v >> 32 != (j & 0xffffffffu) || front >= back) return -1;
      const std::uint64_t next = from_back ? pack(j, front, back - 1) : pack(j, front + 1, back);
      if (chunks[i].compare_exchange_weak(v, next, std::memory_order_acq_rel))
        return static_cast<int>(from_back ? back - 1 : front);
    }
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
    const auto yield_until = spin_until - kSpin + yielding_wait();
    for (int i = 1; now == seen && yield_until > spin_until; ++i) {
      std::this_thread::yield();
      now = s.job.load(std::memory_order_acquire);
      if (i % 8 == 0 && std::chrono::steady_clock::now() > yield_until) break;
    }
    if (now == seen) {
      s.sleeping.fetch_add(1, std::memory_order_seq_cst);
      s.job.wait(seen, std::memory_order_acquire);
      s.sleeping.fetch_sub(1, std::memory_order_seq_cst);
      continue;
    }
    seen = now;
    // Its own part's chunks that nobody has taken (none when the caller ran the whole part),
    // then what is left of the others'.
    for (int chunk; (chunk = s.claim(part, now, false)) >= 0;) s.run(part, chunk);
    for (int other = 0; other < size_; ++other)
      for (int chunk; other != part && (chunk = s.claim(other, now, true)) >= 0;) s.run(other, chunk);
  }
}

int CoreTeam::sleeping_members() const { return state_->sleeping.load(std::memory_order_seq_cst); }

void CoreTeam::run_job(Job fn, int chunks) {
  State& s = *state_;
  chunks = std::clamp(chunks, 1, kMaxChunks);
  std::unique_lock lock(s.busy, std::try_to_lock);
  if (!lock.owns_lock() || size_ == 1) {
    for (int part = 0; part < size_; ++part)
      for (int chunk = 0; chunk < chunks; ++chunk) fn(part, chunk);
    return;
  }
  s.fn = fn;
  s.remaining.store(size_ * chunks, std::memory_order_relaxed);
  // Only the holder of `busy` bumps the job count: this is the id the bump below publishes.
  const std::uint64_t job = s.job.load(std::memory_order_relaxed) + 1;
  for (int part = 0; part < size_; ++part)
    s.chunks[part].store(State::pack(job, 0, static_cast<std::uint64_t>(chunks)), std::memory_order_relaxed);
  s.job.fetch_add(1, std::memory_order_seq_cst);
  if (s.sleeping.load(std::memory_order_seq_cst) > 0) s.job.notify_all();
  for (int chunk; (chunk = s.claim(0, job, false)) >= 0;) s.run(0, chunk);
  for (int part = 1; part < size_; ++part)
    for (int chunk; (chunk = s.claim(part, job, true)) >= 0;) s.run(part, chunk);
  // Only chunks that members have started are left: they finish within a chunk's time, unless
  // the OS took a member's core, when yielding lets it run.
  const auto spin_until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1; s.remaining.load(std::memory_order_acquire) > 0; ++i) {
    if (i % kPollsPerClockRead != 0 || std::chrono::steady_clock::now() < spin_until) _mm_pause();
    else std::this_thread::yield();
  }
}

}  // namespace kiln::cpu
