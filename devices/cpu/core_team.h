// CoreTeam: one thread per core (the caller is member 0) that splits a job into the same parts
// every time, part i always on member i. For the small products of a served model (one to a few
// rows against a weight matrix of megabytes) this keeps each core's share of the weights in its
// own L2 cache from one request to the next: on the 2-core machine (2 MB of L2 a core) the MLP's
// 2.6 MB of weights fit only when split so, and ONNX Runtime's two-thread request ran in 28 us
// against 99 us on one thread. A task pool (oneTBB, OpenBLAS's threads) hands parts to whichever
// thread is free and loses that. Members spin briefly for the next job, then sleep.
#pragma once
#include <cstdint>

namespace kiln::cpu {

class CoreTeam {
 public:
  // The process-wide team: hardware threads, at most 8 (created on first use, never destroyed:
  // kernels may run during static destruction).
  static CoreTeam& get();

  int size() const { return size_; }
  // Runs fn(part) for part in [0, size()): part 0 on the calling thread, part i on member i, and
  // returns when all are done. A caller that finds the team busy (another thread's job) runs
  // every part itself, in order. `fn` is passed by reference (no std::function: a capturing
  // lambda would be a heap allocation per matmul).
  template <class Fn> void run(const Fn& fn) {
    run_job(Job{[](const void* f, int part) { (*static_cast<const Fn*>(f))(part); }, &fn});
  }

  struct Job {
    void (*call)(const void* fn, int part) = nullptr;
    const void* fn = nullptr;
    void operator()(int part) const { call(fn, part); }
  };

 private:
  explicit CoreTeam(int size);
  void run_job(Job job);
  void member_loop(int part);

  struct State;
  State* state_;
  int size_;
};

}  // namespace kiln::cpu
