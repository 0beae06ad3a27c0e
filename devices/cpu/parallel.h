// Parallel loops for CPU kernels. Small ranges run inline: a task costs more than it saves
// below a few tens of thousands of elements. Under ThreadSanitizer every range runs inline:
// oneTBB is not instrumented, so TSan cannot see that a parallel_for's join orders its
// workers' writes before the caller's reads, and would bury real engine races in noise.
#pragma once
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstdint>

namespace kiln::cpu {

inline constexpr std::int64_t kDefaultGrain = 32768;

// fn(begin, end) over [0, n), split into chunks of at least `grain`.
template <class Fn> void parallel_for(std::int64_t n, std::int64_t grain, Fn&& fn) {
  if (n <= 0) return;
#if defined(__SANITIZE_THREAD__)
  grain = n;
#endif
  if (n <= grain) {
    fn(std::int64_t{0}, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<std::int64_t>& r) { fn(r.begin(), r.end()); });
}

template <class Fn> void parallel_for(std::int64_t n, Fn&& fn) { parallel_for(n, kDefaultGrain, fn); }

}  // namespace kiln::cpu
