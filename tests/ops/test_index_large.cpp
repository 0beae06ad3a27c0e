// Index ops at sizes that take the parallel paths of the CPU kernels (above parallel.h's grain),
// checked against plain loops written here from torch's definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "support/reference.h"

namespace kiln {
namespace {

class IndexLarge : public ::testing::TestWithParam<Device> {};

double sum_of(const Tensor& t) {
  double s = 0;
  for (float v : t.to_vector<float>().get()) s += v;
  return s;
}

std::vector<float> random_floats(std::int64_t n, unsigned seed, int distinct = 0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  std::uniform_int_distribution<int> small(0, std::max(distinct - 1, 0));
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = distinct > 0 ? static_cast<float>(small(gen)) : dist(gen);
  return v;
}

std::vector<std::int64_t> random_indices(std::int64_t n, std::int64_t high, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::int64_t> dist(0, high - 1);
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

TEST_P(IndexLarge, GatherAlongEachDim) {
  const std::int64_t R = 300, C = 500;
  const auto x = random_floats(R * C, 1);
  const Tensor xt = from_vector(x, Shape{R, C}, GetParam());
  {  // dim 1, index [R, 400]
    const auto idx = random_indices(R * 400, C, 2);
    const auto got = gather(xt, 1, from_vector(idx, Shape{R, 400}, GetParam())).to_vector<float>().get();
    for (std::int64_t i = 0; i < R; ++i)
      for (std::int64_t j = 0; j < 400; ++j) ASSERT_EQ(got[i * 400 + j], x[i * C + idx[i * 400 + j]]) << i << "," << j;
  }
  {  // dim 0, index [250, 450]
    const auto idx = random_indices(250 * 450, R, 3);
    const auto got = gather(xt, 0, from_vector(idx, Shape{250, 450}, GetParam())).to_vector<float>().get();
    for (std::int64_t i = 0; i < 250; ++i)
      for (std::int64_t j = 0; j < 450; ++j) ASSERT_EQ(got[i * 450 + j], x[idx[i * 450 + j] * C + j]) << i << "," << j;
  }
}

// A bad index found by one of several parallel tasks still reaches the future, and only there.
TEST_P(IndexLarge, OutOfRangeInAParallelGatherReachesTheFuture) {
  const std::int64_t R = 400, C = 300;
  auto idx = random_indices(R * C, C, 15);
  idx[R * C / 2 + 7] = C + 5;
  const Tensor x = zeros(Shape{R, C}, {DType::f32, GetParam()});
  const Tensor out = gather(x, 1, from_vector(idx, Shape{R, C}, GetParam()));
  try {
    (void)out.to_vector<float>().get();
    FAIL() << "expected the read to fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "gather");
    EXPECT_NE(std::string(e.what()).find("index 305 is out of range for dim 1 of size 300"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(sum_of(gather(x, 0, from_vector(std::vector<std::int64_t>(C, 1), Shape{1, C}, GetParam()))), 0.0);
}

TEST_P(IndexLarge, ScatterAddCountsDuplicates) {
  const std::int64_t R = 200, C = 300, J = 1000;
  const auto idx = random_indices(R * J, C, 4);
  std::vector<float> want(R * C, 0.0f);
  for (std::int64_t i = 0; i < R; ++i)
    for (std::int64_t j = 0; j < J; ++j) want[i * C + idx[i * J + j]] += 1.0f;
  const Tensor counts =
      scatter_add(zeros(Shape{R, C}, {DType::f32, GetParam()}), 1, from_vector(idx, Shape{R, J}, GetParam()),
                  ones(Shape{R, J}, {DType::f32, GetParam()}));
  EXPECT_EQ(counts.to_vector<float>().get(), want);
}

TEST_P(IndexLarge, ScatterAlongDim0) {
  const std::int64_t N = 1000, C = 64;
  // index[j][c] = (7 j + c) mod N: distinct along dim 0 for every column, as scatter needs.
  std::vector<std::int64_t> idx(N * C);
  for (std::int64_t j = 0; j < N; ++j)
    for (std::int64_t c = 0; c < C; ++c) idx[j * C + c] = (7 * j + c) % N;
  const auto x = random_floats(N * C, 5), src = random_floats(N * C, 6);
  std::vector<float> want = x;
  for (std::int64_t j = 0; j < N; ++j)
    for (std::int64_t c = 0; c < C; ++c) want[idx[j * C + c] * C + c] = src[j * C + c];
  const Tensor out = scatter(from_vector(x, Shape{N, C}, GetParam()), 0, from_vector(idx, Shape{N, C}, GetParam()),
                             from_vector(src, Shape{N, C}, GetParam()));
  EXPECT_EQ(out.to_vector<float>().get(), want);
}

TEST_P(IndexLarge, IndexSelectRowsAndColumns) {
  const std::int64_t R = 5000, C = 16;
  const auto x = random_floats(R * C, 7);
  const Tensor xt = from_vector(x, Shape{R, C}, GetParam());
  const auto rows = random_indices(6000, R, 8);
  const auto got_rows = index_select(xt, 0, from_vector(rows, Shape{6000}, GetParam())).to_vector<float>().get();
  for (std::int64_t i = 0; i < 6000; ++i)
    for (std::int64_t c = 0; c < C; ++c) ASSERT_EQ(got_rows[i * C + c], x[rows[i] * C + c]);
  const auto cols = random_indices(40, C, 9);
  const auto got_cols = index_select(xt, -1, from_vector(cols, Shape{40}, GetParam())).to_vector<float>().get();
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t j = 0; j < 40; ++j) ASSERT_EQ(got_cols[r * 40 + j], x[r * C + cols[j]]);
}

TEST_P(IndexLarge, MaskedFillWithBroadcastMasks) {
  const std::int64_t R = 512, C = 256;
  const auto x = random_floats(R * C, 10);
  std::mt19937 gen(11);
  std::vector<bool> row_mask(R), col_mask(C);
  for (std::size_t i = 0; i < row_mask.size(); ++i) row_mask[i] = gen() & 1;
  for (std::size_t i = 0; i < col_mask.size(); ++i) col_mask[i] = gen() & 1;
  const Tensor xt = from_vector(x, Shape{R, C}, GetParam());
  const auto by_row = masked_fill(xt, from_vector(row_mask, Shape{R, 1}, GetParam()), -1.0).to_vector<float>().get();
  const auto by_col = masked_fill(xt, from_vector(col_mask, Shape{C}, GetParam()), 2.0).to_vector<float>().get();
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c) {
      ASSERT_EQ(by_row[r * C + c], row_mask[r] ? -1.0f : x[r * C + c]);
      ASSERT_EQ(by_col[r * C + c], col_mask[c] ? 2.0f : x[r * C + c]);
    }
}

TEST_P(IndexLarge, OneHot) {
  const auto idx = random_indices(100000, 10, 12);
  const auto got = one_hot(from_vector(idx, Shape{100000}, GetParam()), 10).to_vector<std::int64_t>().get();
  for (std::int64_t i = 0; i < 100000; ++i)
    for (std::int64_t c = 0; c < 10; ++c) ASSERT_EQ(got[i * 10 + c], idx[i] == c ? 1 : 0);
}

// torch's order: ascending by value, NaN last, ties in their original order.
std::vector<std::int64_t> reference_order(const std::vector<float>& v, bool descending) {
  std::vector<std::int64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [](float x) { return std::isnan(x) ? INFINITY : x; };
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    const bool na = std::isnan(v[a]), nb = std::isnan(v[b]);
    if (na != nb) return descending ? na : nb;
    return descending ? key(v[a]) > key(v[b]) : key(v[a]) < key(v[b]);
  });
  return order;
}

TEST_P(IndexLarge, SortWithTiesAndNaNAlongEachDim) {
  const std::int64_t R = 20, C = 5000;
  auto x = random_floats(R * C, 13, 100);
  for (std::int64_t i = 0; i < R * C; i += 97) x[i] = NAN;
  const Tensor xt = from_vector(x, Shape{R, C}, GetParam());
  for (bool descending : {false, true}) {
    SCOPED_TRACE(descending ? "descending" : "ascending");
    for (std::int64_t dim : {1, 0}) {
      const std::int64_t slices = dim == 1 ? R : C, len = dim == 1 ? C : R;
      auto [values, indices] = sort(xt, dim, descending);
      const auto v = values.to_vector<float>().get();
      const auto ix = indices.to_vector<std::int64_t>().get();
      for (std::int64_t s = 0; s < slices; ++s) {
        auto at = [&](std::int64_t p) { return dim == 1 ? s * C + p : p * C + s; };
        std::vector<float> slice(len);
        for (std::int64_t p = 0; p < len; ++p) slice[p] = x[at(p)];
        const auto want = reference_order(slice, descending);
        for (std::int64_t p = 0; p < len; ++p) {
          ASSERT_EQ(ix[at(p)], want[p]) << "slice " << s << " position " << p;
          const float w = slice[want[p]];
          ASSERT_TRUE(std::isnan(w) ? std::isnan(v[at(p)]) : v[at(p)] == w);
        }
      }
    }
  }
}

TEST_P(IndexLarge, TopkOfDistinctValues) {
  const std::int64_t R = 10, C = 10000, K = 5;
  std::vector<float> x(R * C);
  std::iota(x.begin(), x.end(), 0.0f);
  std::shuffle(x.begin(), x.end(), std::mt19937(14));
  const Tensor xt = from_vector(x, Shape{R, C}, GetParam());
  for (bool largest : {true, false}) {
    auto [values, indices] = topk(xt, K, 1, largest);
    const auto v = values.to_vector<float>().get();
    const auto ix = indices.to_vector<std::int64_t>().get();
    for (std::int64_t r = 0; r < R; ++r) {
      const std::vector<float> row(x.begin() + r * C, x.begin() + (r + 1) * C);
      const auto want = reference_order(row, largest);
      for (std::int64_t p = 0; p < K; ++p) {
        ASSERT_EQ(ix[r * K + p], want[p]);
        ASSERT_EQ(v[r * K + p], row[want[p]]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, IndexLarge, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
