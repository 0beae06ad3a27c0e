#include "kiln/data/random.h"

#include <numeric>
#include <string>
#include <utility>

#include "kiln/base/error.h"

namespace kiln::data {

std::vector<std::int64_t> random_permutation(std::int64_t n, std::uint64_t seed) {
  KILN_CHECK(n >= 0, "random_permutation", "n must not be negative, got " + std::to_string(n));
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  Rng rng(seed);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

}  // namespace kiln::data
