// Creation ops: tensors from user data, constants, ranges and seedable random numbers.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln {

Tensor from_vector(std::vector<float> data, const Shape& shape, Device device = Device::cpu());
Tensor from_vector(std::vector<std::int64_t> data, const Shape& shape, Device device = Device::cpu());
Tensor from_vector(const std::vector<bool>& data, const Shape& shape, Device device = Device::cpu());

Tensor scalar(double value, TensorOptions options = {});  // a 0-d tensor
Tensor full(const Shape& shape, double value, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full_like(const Tensor& like, double value);
Tensor zeros_like(const Tensor& like);
Tensor ones_like(const Tensor& like);
// [start, end) in steps of `step`, like torch.arange.
Tensor arange(double start, double end, double step = 1.0, TensorOptions options = {});
Tensor arange(double end, TensorOptions options = {});
Tensor linspace(double start, double end, std::int64_t steps, TensorOptions options = {});
// n x m identity (m = n when negative).
Tensor eye(std::int64_t n, std::int64_t m = -1, TensorOptions options = {});

// A seedable source of random tensors. Values are counter-based (a SplitMix64 hash): element i
// of a draw depends only on the seed, the draw number and i, so results do not depend on threads.
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0x6b696c6eULL) : seed_(seed) {}
  std::uint64_t seed() const { return seed_; }
  // Draws taken so far: with the seed, the generator's whole state (checkpoints save both).
  std::uint64_t draws() const { return draws_; }
  void restore(std::uint64_t seed, std::uint64_t draws) {
    seed_ = seed;
    draws_ = draws;
  }
  std::uint64_t next_draw() { return (seed_ * 0x9E3779B97F4A7C15ULL) ^ (++draws_ * 0xD1B54A32D192ED03ULL); }

 private:
  std::uint64_t seed_;
  std::uint64_t draws_ = 0;
};

// The process-wide default generator (not thread-safe: give each thread its own Generator).
Generator& default_generator();
void manual_seed(std::uint64_t seed);

Tensor uniform(const Shape& shape, double low, double high, Generator& gen = default_generator(),
               TensorOptions options = {});
Tensor rand(const Shape& shape, Generator& gen = default_generator(), TensorOptions options = {});
Tensor normal(const Shape& shape, double mean, double std, Generator& gen = default_generator(),
              TensorOptions options = {});
Tensor randn(const Shape& shape, Generator& gen = default_generator(), TensorOptions options = {});
// 1 with probability p, else 0, in options.dtype.
Tensor bernoulli(const Shape& shape, double p, Generator& gen = default_generator(), TensorOptions options = {});

}  // namespace kiln
