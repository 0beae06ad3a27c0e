// Call-site errors of the layout family: each throws kiln::Error on the caller's thread, names
// the op and the shapes involved. Also torch's non-errors that look like errors (squeeze of a
// dim that is not 1).
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <string>

#include "kiln/engine/kiln.h"
#include "support/expect_error.h"
#include "support/reference.h"

namespace kiln {
namespace {

using test::expect_error;

class LayoutErrors : public ::testing::TestWithParam<Device> {
 protected:
  Tensor f32(const Shape& s) { return full(s, 1.0, {DType::f32, GetParam()}); }
  Tensor i64(const Shape& s) { return full(s, 1.0, {DType::i64, GetParam()}); }
};

TEST_P(LayoutErrors, ReshapeIncompatibleNumelNamesBothShapes) {
  expect_error([&] { return reshape(f32({2, 3}), {4, 2}); }, "reshape", {"[4, 2]", "f32[2, 3]", "6 elements"});
  expect_error([&] { return reshape(f32({2, 3}), {-1, 4}); }, "reshape", {"[-1, 4]", "f32[2, 3]"});
}

TEST_P(LayoutErrors, ReshapeTwoInferredDims) {
  expect_error([&] { return reshape(f32({2, 3}), {-1, -1}); }, "reshape", {"[-1, -1]", "more than one -1"});
}

TEST_P(LayoutErrors, ReshapeNegativeOrAmbiguous) {
  expect_error([&] { return reshape(f32({2, 3}), {-2, -3}); }, "reshape", {"[-2, -3]", "negative"});
  expect_error([&] { return reshape(f32({0, 3}), {-1, 0}); }, "reshape", {"[-1, 0]", "f32[0, 3]", "ambiguous"});
}

TEST_P(LayoutErrors, PermuteRepeatedMissingOrOutOfRangeDim) {
  expect_error([&] { return permute(f32({2, 3, 4}), {0, 0, 1}); }, "permute", {"[0, 0, 1]", "f32[2, 3, 4]"});
  expect_error([&] { return permute(f32({2, 3, 4}), {0, 1}); }, "permute", {"[0, 1]", "f32[2, 3, 4]"});
  expect_error([&] { return permute(f32({2, 3}), {0, 2}); }, "permute", {"[0, 2]", "f32[2, 3]"});
  expect_error([&] { return permute(f32({2, 3}), {-1, 1}); }, "permute", {"[-1, 1]", "f32[2, 3]"});
}

TEST_P(LayoutErrors, TransposeDimOutOfRange) {
  expect_error([&] { return transpose(f32({2, 3}), 0, 2); }, "transpose", {"dim 2", "rank 2"});
}

TEST_P(LayoutErrors, ExpandOfANonUnitDim) {
  expect_error([&] { return expand(f32({2, 3}), {4, 3}); }, "expand", {"f32[2, 3]", "[4, 3]", "dim 0"});
  expect_error([&] { return expand(f32({2, 3}), {3}); }, "expand", {"f32[2, 3]", "[3]", "fewer dims"});
  expect_error([&] { return expand(f32({3}), {-1, 3}); }, "expand", {"[-1, 3]", "f32[3]", "leading"});
}

TEST_P(LayoutErrors, CatMismatchedShapes) {
  expect_error([&] { return cat({f32({2, 3}), f32({2, 4})}, 0); }, "cat", {"f32[2, 3]", "f32[2, 4]", "dim 0"});
  expect_error([&] { return cat({f32({2, 3}), f32({2, 3, 1})}, 0); }, "cat", {"f32[2, 3]", "f32[2, 3, 1]"});
  expect_error([&] { return cat({f32({2, 3}), f32({2, 3})}, 2); }, "cat", {"dim 2", "rank 2"});
}

TEST_P(LayoutErrors, CatMismatchedDtypes) {
  expect_error([&] { return cat({f32({2, 3}), i64({1, 3})}, 0); }, "cat", {"same dtype", "f32[2, 3]", "i64[1, 3]"});
}

TEST_P(LayoutErrors, CatOfNothingOrOf0d) {
  expect_error([&] { return cat({}, 0); }, "cat", {"at least one"});
  expect_error([&] { return cat({f32({}), f32({})}, 0); }, "cat", {"zero-dimensional", "f32[]"});
}

TEST_P(LayoutErrors, StackOfDifferentShapes) {
  expect_error([&] { return stack({f32({2, 3}), f32({3, 2})}, 0); }, "stack", {"f32[2, 3]", "f32[3, 2]", "entry 1"});
}

TEST_P(LayoutErrors, SliceStepMustBePositive) {
  expect_error([&] { return slice(f32({4, 3}), 0, 0, 4, 0); }, "slice", {"step", "0", "f32[4, 3]"});
  expect_error([&] { return slice(f32({4, 3}), 0, 0, 4, -1); }, "slice", {"step", "-1", "f32[4, 3]"});
  expect_error([&] { return slice(f32({}), 0, 0, 1, 1); }, "slice", {"0-d", "f32[]"});
}

TEST_P(LayoutErrors, NarrowOutOfRange) {
  expect_error([&] { return narrow(f32({2, 3}), 1, 2, 2); }, "narrow", {"start (2) + length (2)", "f32[2, 3]"});
  expect_error([&] { return narrow(f32({2, 3}), 1, -4, 1); }, "narrow", {"start -4", "f32[2, 3]"});
  expect_error([&] { return narrow(f32({2, 3}), 1, 0, -1); }, "narrow", {"length"});
  expect_error([&] { return narrow(f32({2, 3}), 2, 0, 1); }, "narrow", {"dim 2", "rank 2"});
}

TEST_P(LayoutErrors, SqueezeOfANonUnitDimIsUnchangedLikeTorch) {
  Tensor x = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3}, GetParam());
  Tensor y = squeeze(x, 0);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>().get(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  expect_error([&] { return squeeze(f32({2, 3}), 2); }, "squeeze", {"dim 2", "rank 2"});
}

TEST_P(LayoutErrors, UnsqueezeDimOutOfRange) {
  expect_error([&] { return unsqueeze(f32({2, 3}), 3); }, "unsqueeze", {"dim 3", "rank 3"});
  expect_error([&] { return unsqueeze(f32({2, 3}), -4); }, "unsqueeze", {"dim -4"});
}

TEST_P(LayoutErrors, FlattenStartAfterEnd) {
  expect_error([&] { return flatten(f32({2, 3, 4}), 2, 1); }, "flatten", {"start_dim 2", "end_dim 1", "f32[2, 3, 4]"});
}

TEST_P(LayoutErrors, SplitSizesNotSummingToTheDim) {
  expect_error(
      [&] {
        return split(f32({3, 2}), std::vector<std::int64_t>{1, 1}, 0);
      },
      "split", {"[1, 1]", "sum to 2", "not to 3", "f32[3, 2]"});
  expect_error(
      [&] {
        return split(f32({3, 2}), std::vector<std::int64_t>{4, -1}, 0);
      },
      "split", {"[4, -1]", "negative"});
  expect_error([&] { return split(f32({3, 2}), std::int64_t{0}, 0); }, "split", {"split_size", "f32[3, 2]"});
}

TEST_P(LayoutErrors, ChunkCountMustBePositive) {
  expect_error([&] { return chunk(f32({3, 2}), 0, 0); }, "chunk", {"chunks", "0"});
}

TEST_P(LayoutErrors, FlipRepeatedDim) {
  expect_error([&] { return flip(f32({2, 3}), {0, -2}); }, "flip", {"dim 0", "more than once", "f32[2, 3]"});
  expect_error([&] { return flip(f32({2, 3}), {2}); }, "flip", {"dim 2", "rank 2"});
}

TEST_P(LayoutErrors, RepeatTooFewOrNegativeRepeats) {
  expect_error([&] { return repeat(f32({2, 3}), {2}); }, "repeat", {"[2]", "f32[2, 3]"});
  expect_error([&] { return repeat(f32({2, 3}), {2, -1}); }, "repeat", {"[2, -1]", "negative"});
}

TEST_P(LayoutErrors, PadBadPairs) {
  expect_error([&] { return pad(f32({2, 3}), {1}); }, "pad", {"[1]", "pairs"});
  expect_error([&] { return pad(f32({2, 3}), {1, 1, 1, 1, 1, 1}); }, "pad", {"[1, 1, 1, 1, 1, 1]", "f32[2, 3]"});
  expect_error([&] { return pad(f32({2, 3}), {-2, -2}); }, "pad", {"[-2, -2]", "f32[2, 3]", "negative"});
  expect_error([&] { return pad(i64({2, 3}), {1, 1}, std::nan("")); }, "pad", {"i64[2, 3]"});
}

TEST_P(LayoutErrors, TriangleNeedsTwoDims) {
  expect_error([&] { return tril(f32({3}), 0); }, "tril", {"f32[3]", "at least 2 dims"});
  expect_error([&] { return triu(f32({}), 0); }, "triu", {"f32[]", "at least 2 dims"});
}

TEST_P(LayoutErrors, UndefinedInputIsAClearError) {
  Tensor undefined;
  EXPECT_THROW((void)tril(undefined, 0), Error);
  EXPECT_THROW((void)reshape(undefined, {1}), Error);
}

INSTANTIATE_TEST_SUITE_P(Devices, LayoutErrors, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
