// Inputs of the tests that check a served model's answers exactly: small integers (exact in f32
// through products with weights over powers of two), different for each request id.
#pragma once
#include <cstdint>
#include <vector>

namespace kiln::test {

inline std::vector<float> exact_input(int id, std::int64_t size) {
  std::vector<float> x(static_cast<std::size_t>(size));
  for (std::int64_t i = 0; i < size; ++i) x[i] = static_cast<float>((id * 7 + i * 3) % 11) - 5.0f;
  return x;
}

}  // namespace kiln::test
