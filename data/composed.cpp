#include "kiln/data/composed.h"

#include <cmath>
#include <numeric>

namespace kiln::data {

namespace {

// math.isclose(total, 1) with Python's default rel_tol of 1e-9.
bool close_to_one(double total) { return std::abs(total - 1.0) <= 1e-9 * std::max(std::abs(total), 1.0); }

std::string format_lengths(const std::vector<double>& lengths) {
  std::string s = "[";
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (i) s += ", ";
    std::string v = std::to_string(lengths[i]);
    v.erase(v.find_last_not_of('0') + 1);
    if (!v.empty() && v.back() == '.') v.pop_back();
    s += v;
  }
  return s + "]";
}

}  // namespace

std::vector<std::int64_t> split_lengths(std::int64_t n, const std::vector<double>& lengths) {
  KILN_CHECK(!lengths.empty(), "random_split", "no lengths given");
  for (double l : lengths)
    KILN_CHECK(std::isfinite(l) && l >= 0, "random_split",
               "lengths must be finite and non-negative, got " + format_lengths(lengths));
  const double total = std::accumulate(lengths.begin(), lengths.end(), 0.0);
  std::vector<std::int64_t> sizes;
  if (close_to_one(total) && total <= 1.0) {
    for (double fraction : lengths)
      sizes.push_back(static_cast<std::int64_t>(std::floor(static_cast<double>(n) * fraction)));
    const std::int64_t remainder = n - std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
    for (std::int64_t i = 0; i < remainder; ++i) ++sizes[static_cast<std::size_t>(i) % sizes.size()];
    return sizes;
  }
  for (double l : lengths) {
    KILN_CHECK(l == std::floor(l) && l <= 0x1p62, "random_split",
               "lengths " + format_lengths(lengths) + " are neither fractions summing to 1 nor whole item counts");
    sizes.push_back(static_cast<std::int64_t>(l));
  }
  const std::int64_t sum = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
  KILN_CHECK(sum == n, "random_split",
             "lengths " + format_lengths(lengths) + " sum to " + std::to_string(sum) + " but the dataset has " +
                 std::to_string(n) + " items");
  return sizes;
}

}  // namespace kiln::data
