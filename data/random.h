// Counter-based randomness for data pipelines. Every random choice a loader makes — the epoch's
// order, a crop's offset, a flip — comes from a hash of (seed, epoch, index), never from a
// shared generator, so an item comes out the same whichever worker thread builds it and however
// many workers there are.
#pragma once
#include <cstdint>
#include <vector>

namespace kiln::data {

// SplitMix64's finalizer: a bijective 64-bit hash whose outputs pass BigCrush when fed a counter.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Combines two values into one seed; the order matters (mix(a, b) != mix(b, a)).
constexpr std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) { return splitmix64(splitmix64(a) ^ b); }

// The seed of item `index` in epoch `epoch` of a loader seeded with `seed`.
constexpr std::uint64_t item_seed(std::uint64_t seed, std::uint64_t epoch, std::int64_t index) {
  return mix_seed(mix_seed(seed, epoch), static_cast<std::uint64_t>(index));
}

// A stream of random numbers from one seed: draw k is splitmix64(seed + k * golden ratio).
// Cheap to make (one per item); not shared between threads.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(splitmix64(seed)) {}

  std::uint64_t next_u64() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return splitmix64(state_);
  }
  // Uniform in [0, 1), with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n) without modulo bias (Lemire's multiply-and-reject); n must be positive.
  std::uint64_t below(std::uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next_u64()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }
  // True with probability p.
  bool chance(double p) { return uniform() < p; }

 private:
  std::uint64_t state_;
};

// 0..n-1 in an order that depends only on `seed` (Fisher-Yates driven by Rng(seed)).
std::vector<std::int64_t> random_permutation(std::int64_t n, std::uint64_t seed);

}  // namespace kiln::data
