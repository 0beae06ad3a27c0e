// Parallel loops for CPU kernels. Small ranges run inline: a task costs more than it saves
// below a few tens of thousands of elements.
#pragma once
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstdint>

namespace kiln::cpu {

inline constexpr std::int64_t kDefaultGrain = 32768;

// fn(begin, end) over [0, n), split into chunks of at least `grain`.
template <class Fn> void parallel_for(std::int64_t n, std::int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  if (n <= grain) {
    fn(std::int64_t{0}, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<std::int64_t>& r) { fn(r.begin(), r.end()); });
}

template <class Fn> void parallel_for(std::int64_t n, Fn&& fn) { parallel_for(n, kDefaultGrain, fn); }

}  // namespace kiln::cpu
