// CoreTeam: one thread per core (the caller is member 0) that splits a job into the same parts
// every time, part i always on member i. For the small products of a served model (one to a few
// rows against a weight matrix of megabytes) this keeps each core's share of the weights in its
// own L2 cache from one request to the next: on the 2-core machine (2 MB of L2 a core) the MLP's
// 2.6 MB of weights fit only when split so, and ONNX Runtime's two-thread request ran in 28 us
// against 99 us on one thread. A task pool (oneTBB, OpenBLAS's threads) hands parts to whichever
// thread is free and loses that. Members poll for the next job (for up to a millisecond, yielding
// their core after the first 30 us), then sleep.
#pragma once
#include <cstdint>

namespace kiln::cpu {

class CoreTeam {
 public:
  // The process-wide team: hardware threads, at most 8 (created on first use, never destroyed:
  // kernels may run during static destruction).
  static CoreTeam& get();

  int size() const { return size_; }
  // Members asleep now, waiting for a job (after polling for one: core_team.cpp says how long).
  int sleeping_members() const;
  // Runs fn(part) for part in [0, size()): part 0 on the calling thread, part i on member i, and
  // returns when all are done. A caller that finds the team busy (another thread's job) runs
  // every part itself, in order. `fn` is passed by reference (no std::function: a capturing
  // lambda would be a heap allocation per matmul).
  template <class Fn> void run(const Fn& fn) {
    run_job(Job{[](const void* f, int part, int) { (*static_cast<const Fn*>(f))(part); }, &fn}, 1);
  }
  // The same with each part cut into `chunks` (1 to kMaxChunks): fn(part, chunk) for every
  // chunk of every part. Part i's thread runs its chunks from the first on; a thread done with
  // its own part takes the chunks nobody has started of the others', from the last one back.
  // When nothing is preempted each core still runs its own part (its weights stay in its
  // cache); when the OS takes a thread's core mid-part, the other finishes that part instead of
  // waiting a time slice for it (the tail of a served model's requests on a busy machine).
  static constexpr int kMaxChunks = 64;
  template <class Fn> void run_chunked(int chunks, const Fn& fn) {
    run_job(Job{[](const void* f, int part, int chunk) { (*static_cast<const Fn*>(f))(part, chunk); }, &fn}, chunks);
  }

  struct Job {
    void (*call)(const void* fn, int part, int chunk) = nullptr;
    const void* fn = nullptr;
    void operator()(int part, int chunk) const { call(fn, part, chunk); }
  };

 private:
  explicit CoreTeam(int size);
  void run_job(Job job, int chunks);
  void member_loop(int part);

  struct State;
  State* state_;
  int size_;
};

}  // namespace kiln::cpu
