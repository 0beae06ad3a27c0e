// Layout ops on tensors big enough for the parallel and cache-blocked paths (too big for the
// committed PyTorch data). Inputs are 0, 1, 2, ... so each expected value is the input index
// the op's definition names, computed by a plain loop here.
#include <gtest/gtest.h>

#include <numeric>

#include "kiln/engine/kiln.h"
#include "support/reference.h"

namespace kiln {
namespace {

class LayoutLarge : public ::testing::TestWithParam<Device> {
 protected:
  Tensor iota(const Shape& s) {
    std::vector<float> v(static_cast<std::size_t>(s.numel()));
    std::iota(v.begin(), v.end(), 0.0f);
    return from_vector(std::move(v), s, GetParam());
  }
  Tensor iota_i64(const Shape& s) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(s.numel()));
    std::iota(v.begin(), v.end(), std::int64_t{1} << 40);
    return from_vector(std::move(v), s, GetParam());
  }

  // Compares every value of `t` (row-major over `shape`) with the input index `source(idx)`.
  template <class T, class Fn>
  void expect_gather(const Tensor& t, const Shape& shape, T base, Fn&& source) {
    ASSERT_EQ(t.shape(), shape);
    const std::vector<T> got = t.template to_vector<T>().get();
    std::vector<std::int64_t> idx(static_cast<std::size_t>(shape.rank()), 0);
    std::int64_t bad = 0, first_bad = -1;
    for (std::int64_t flat = 0; flat < shape.numel(); ++flat) {
      const T want = base + static_cast<T>(source(idx));
      if (got[static_cast<std::size_t>(flat)] != want && bad++ == 0) first_bad = flat;
      for (int d = shape.rank() - 1; d >= 0; --d) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    EXPECT_EQ(bad, 0) << "first wrong value at flat index " << first_bad;
  }
};

TEST_P(LayoutLarge, Transpose2D) {
  const std::int64_t r = 1024, c = 1000;
  expect_gather(transpose(iota({r, c}), 0, 1), Shape{c, r}, 0.0f, [&](const auto& i) { return i[1] * c + i[0]; });
}

TEST_P(LayoutLarge, BatchedInnerSwapWithRaggedTiles) {
  const std::int64_t b = 3, r = 131, c = 257;
  expect_gather(permute(iota({b, r, c}), {0, 2, 1}), Shape{b, c, r}, 0.0f,
                [&](const auto& i) { return (i[0] * r + i[2]) * c + i[1]; });
}

TEST_P(LayoutLarge, InnerSwapOfI64) {
  const std::int64_t r = 70, c = 45;
  expect_gather(transpose(iota_i64({2, r, c}), -1, -2), Shape{2, c, r}, std::int64_t{1} << 40,
                [&](const auto& i) { return (i[0] * r + i[2]) * c + i[1]; });
}

TEST_P(LayoutLarge, InnerSwapOfBool) {
  // Bool values: element k is true when k % 3 == 0, so a misplaced element shows.
  const std::int64_t r = 67, c = 91;
  std::vector<bool> v(static_cast<std::size_t>(r * c));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = k % 3 == 0;
  const std::vector<bool> got = transpose(from_vector(v, Shape{r, c}, GetParam()), 0, 1).to_vector<bool>().get();
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j < r; ++j) bad += got[static_cast<std::size_t>(i * r + j)] != ((j * c + i) % 3 == 0);
  EXPECT_EQ(bad, 0);
}

TEST_P(LayoutLarge, Permute4D) {
  const Shape s{8, 16, 32, 33};
  expect_gather(permute(iota(s), {2, 0, 3, 1}), Shape{32, 8, 33, 16}, 0.0f,
                [&](const auto& i) { return ((i[1] * 16 + i[3]) * 32 + i[0]) * 33 + i[2]; });
}

TEST_P(LayoutLarge, ReversedDimsTileAroundTheContiguousDim) {
  const std::int64_t a = 40, b = 3, c = 50;
  expect_gather(permute(iota({a, b, c}), {2, 1, 0}), Shape{c, b, a}, 0.0f,
                [&](const auto& i) { return (i[2] * b + i[1]) * c + i[0]; });
}

TEST_P(LayoutLarge, SliceWithStep) {
  const std::int64_t r = 2000, c = 300;
  expect_gather(slice(iota({r, c}), 1, 5, -2, 3), Shape{r, 98}, 0.0f,
                [&](const auto& i) { return i[0] * c + 5 + 3 * i[1]; });
}

TEST_P(LayoutLarge, FlipBothDims) {
  const std::int64_t r = 500, c = 700;
  expect_gather(flip(iota({r, c}), {0, 1}), Shape{r, c}, 0.0f,
                [&](const auto& i) { return (r - 1 - i[0]) * c + (c - 1 - i[1]); });
}

TEST_P(LayoutLarge, ExpandRowsAndColumns) {
  expect_gather(expand(iota({1, 4096}), {300, 4096}), Shape{300, 4096}, 0.0f, [](const auto& i) { return i[1]; });
  expect_gather(expand(iota({4096, 1}), {2, 4096, 40}), Shape{2, 4096, 40}, 0.0f, [](const auto& i) { return i[1]; });
}

TEST_P(LayoutLarge, Repeat) {
  const std::int64_t r = 100, c = 70;
  expect_gather(repeat(iota({r, c}), {2, 3, 5}), Shape{2, 3 * r, 5 * c}, 0.0f,
                [&](const auto& i) { return (i[1] % r) * c + i[2] % c; });
}

TEST_P(LayoutLarge, CatAlongColumns) {
  const std::int64_t r = 400, a = 300, b = 500;
  Tensor left = iota({r, a});
  Tensor right = iota({r, b});
  expect_gather(cat({left, right}, 1), Shape{r, a + b}, 0.0f,
                [&](const auto& i) { return i[1] < a ? i[0] * a + i[1] : i[0] * b + i[1] - a; });
}

TEST_P(LayoutLarge, PadGrowAndCrop) {
  const std::int64_t r = 300, c = 500;
  // Last dim: 3 before, crop 2 after; first dim: crop 4 before, 7 after. Padding reads as -1.
  expect_gather(pad(iota({r, c}), {3, -2, -4, 7}, -1.0), Shape{r + 3, c + 1}, 0.0f, [&](const auto& i) {
    const std::int64_t src_r = i[0] + 4, src_c = i[1] - 3;
    return src_r < r && src_c >= 0 ? src_r * c + src_c : std::int64_t{-1};
  });
}

INSTANTIATE_TEST_SUITE_P(Devices, LayoutLarge, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
