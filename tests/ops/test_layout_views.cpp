// reshape is a view: it shares its input's buffer, runs no kernel, allocates nothing, and a
// buffer shared with a view is never overwritten in place. tril/triu run in place when handed
// the last handle. Expected values are written out from the definitions of the ops.
#include <gtest/gtest.h>

#include <numeric>

#include "kiln/engine/kiln.h"
#include "support/reference.h"

namespace kiln {
namespace {

class LayoutViews : public ::testing::TestWithParam<Device> {
 protected:
  Tensor iota(const Shape& s) {
    std::vector<float> v(static_cast<std::size_t>(s.numel()));
    std::iota(v.begin(), v.end(), 0.0f);
    return from_vector(std::move(v), s, GetParam());
  }
};

TEST_P(LayoutViews, ReshapeSharesTheBufferAndRunsNoKernel) {
  Tensor x = iota(Shape{2, 3});
  sync(GetParam()).get();
  const std::size_t in_use = memory_stats(GetParam()).bytes_in_use;
  const std::uint64_t allocations = memory_stats(GetParam()).allocations;
  const std::uint64_t kernels = counters(GetParam()).kernels_launched;
  Tensor y = reshape(x, {3, 2});
  Tensor z = flatten(unsqueeze(y, 0));
  Tensor w = squeeze(reshape(z, {1, 6, 1}));
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(z.shape(), (Shape{6}));
  EXPECT_EQ(y.to_vector<float>().get(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(w.to_vector<float>().get(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(x.to_vector<float>().get(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  sync(GetParam()).get();
  EXPECT_EQ(counters(GetParam()).kernels_launched, kernels);
  EXPECT_EQ(memory_stats(GetParam()).allocations, allocations);
  EXPECT_EQ(memory_stats(GetParam()).bytes_in_use, in_use);
}

TEST_P(LayoutViews, ReshapeOfAMovedTensorThenInPlaceTril) {
  Tensor x = iota(Shape{9});
  Tensor y = reshape(std::move(x), {3, 3});
  sync(GetParam()).get();
  const std::uint64_t reuses = counters(GetParam()).inplace_reuses;
  Tensor z = tril(std::move(y));
  EXPECT_EQ(z.to_vector<float>().get(), (std::vector<float>{0, 0, 0, 3, 4, 0, 6, 7, 8}));
  EXPECT_EQ(counters(GetParam()).inplace_reuses - reuses, 1u);
}

TEST_P(LayoutViews, AViewBlocksInPlaceReuse) {
  Tensor x = iota(Shape{3, 3});
  Tensor v = reshape(x, {9});
  sync(GetParam()).get();
  const std::uint64_t reuses = counters(GetParam()).inplace_reuses;
  Tensor z = triu(std::move(x), 1);
  EXPECT_EQ(z.to_vector<float>().get(), (std::vector<float>{0, 1, 2, 0, 0, 5, 0, 0, 0}));
  EXPECT_EQ(v.to_vector<float>().get(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(counters(GetParam()).inplace_reuses, reuses);
}

TEST_P(LayoutViews, PendingReadOfTheViewSeesValuesBeforeAnInPlaceWrite) {
  Tensor x = iota(Shape{2, 2});
  auto before = x.to_vector<float>();
  Tensor z = tril(reshape(std::move(x), {2, 2}), -1);
  EXPECT_EQ(before.get(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(z.to_vector<float>().get(), (std::vector<float>{0, 0, 2, 0}));
}

TEST_P(LayoutViews, LargeTriuInPlaceMatchesTheDefinition) {
  const std::int64_t b = 3, r = 300, c = 400, k = -7;
  Tensor x = iota(Shape{b, r, c});
  sync(GetParam()).get();
  const std::uint64_t reuses = counters(GetParam()).inplace_reuses;
  const std::vector<float> got = triu(std::move(x), k).to_vector<float>().get();
  EXPECT_EQ(counters(GetParam()).inplace_reuses - reuses, 1u);
  std::int64_t bad = 0;
  for (std::int64_t n = 0; n < b; ++n)
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < c; ++j) {
        const std::int64_t at = (n * r + i) * c + j;
        bad += got[at] != (j - i >= k ? static_cast<float>(at) : 0.0f);
      }
  EXPECT_EQ(bad, 0);
}

TEST_P(LayoutViews, ReturnedOutputsAreIndependentOfTheirInput) {
  // A copy op handed a shared input must leave the input untouched.
  Tensor x = iota(Shape{2, 3});
  Tensor y = flip(x, {1});
  Tensor z = permute(x, {1, 0});
  EXPECT_EQ(y.to_vector<float>().get(), (std::vector<float>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(z.to_vector<float>().get(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(x.to_vector<float>().get(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

INSTANTIATE_TEST_SUITE_P(Devices, LayoutViews, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
