// Call-site errors of the index family: each names the op and the shapes and dtypes involved,
// and a failed call leaves its inputs usable.
#include <gtest/gtest.h>

#include <limits>

#include "support/expect_error.h"
#include "support/reference.h"

namespace kiln {
namespace {

class IndexErrors : public ::testing::TestWithParam<Device> {
 protected:
  Tensor f32(const Shape& s) const { return zeros(s, {DType::f32, GetParam()}); }
  Tensor i64(const Shape& s) const { return zeros(s, {DType::i64, GetParam()}); }
  Tensor boolean(const Shape& s) const { return zeros(s, {DType::bool_, GetParam()}); }
};

using test::expect_error;

TEST_P(IndexErrors, Gather) {
  expect_error([&] { return gather(f32({3, 4}), 1, f32({3, 2})); }, "gather", {"i64 index", "f32[3, 2]"});
  expect_error([&] { return gather(f32({3, 4}), 1, i64({3})); }, "gather", {"same rank", "i64[3]", "f32[3, 4]"});
  expect_error(
      [&] {
        return gather(f32({3, 4}), 1, i64({4, 2}));
      },
      "gather", {"larger", "i64[4, 2]", "f32[3, 4]", "dim 0"});
  expect_error([&] { return gather(f32({3, 4}), 2, i64({3, 2})); }, "gather", {"dim 2", "out of range", "f32[3, 4]"});
  expect_error([&] { return gather(f32({3, 4}), -3, i64({3, 2})); }, "gather", {"dim -3", "out of range", "f32[3, 4]"});
}

TEST_P(IndexErrors, Scatter) {
  for (const char* op : {"scatter", "scatter_add"}) {
    SCOPED_TRACE(op);
    auto call = [&](Tensor x, std::int64_t dim, Tensor index, Tensor src) {
      return std::string(op) == "scatter" ? scatter(x, dim, index, src) : scatter_add(x, dim, index, src);
    };
    expect_error(
        [&] {
          return call(f32({3, 4}), 1, i64({3, 2}), i64({3, 2}));
        },
        op, {"src i64[3, 2]", "dtype", "f32[3, 4]"});
    expect_error(
        [&] {
          return call(f32({3, 4}), 1, i64({3, 3}), f32({3, 2}));
        },
        op, {"larger than src", "i64[3, 3]", "f32[3, 2]"});
    expect_error(
        [&] {
          return call(f32({3, 4}), 1, i64({4, 2}), f32({4, 2}));
        },
        op, {"larger than input", "i64[4, 2]", "f32[3, 4]"});
    expect_error([&] { return call(f32({3, 4}), 0, i64({3}), f32({3})); }, op, {"same rank", "i64[3]"});
    expect_error([&] { return call(f32({3, 4}), 1, i64({3, 2}), f32({3})); }, op, {"same rank", "src f32[3]"});
    expect_error([&] { return call(f32({3, 4}), 1, f32({3, 2}), f32({3, 2})); }, op, {"i64 index", "f32[3, 2]"});
    expect_error(
        [&] {
          return call(f32({3, 4}), 2, i64({3, 2}), f32({3, 2}));
        },
        op, {"dim 2", "out of range", "f32[3, 4]"});
  }
}

TEST_P(IndexErrors, IndexSelect) {
  expect_error([&] { return index_select(f32({3, 4}), 0, i64({2, 1})); }, "index_select", {"1-D", "i64[2, 1]"});
  expect_error([&] { return index_select(f32({3, 4}), 0, boolean({2})); }, "index_select", {"i64 index", "bool[2]"});
  expect_error(
      [&] {
        return index_select(f32({3, 0}), 1, i64({2}));
      },
      "index_select", {"empty", "f32[3, 0]", "i64[2]"});
  expect_error([&] { return index_select(f32({}), 0, i64({2})); }, "index_select", {"0-d", "f32[]", "i64[2]"});
  expect_error(
      [&] {
        return index_select(f32({3, 4}), -3, i64({2}));
      },
      "index_select", {"dim -3", "out of range", "f32[3, 4]"});
}

TEST_P(IndexErrors, MaskedFill) {
  expect_error([&] { return masked_fill(f32({2, 3}), i64({2, 3}), 1.0); }, "masked_fill", {"bool mask", "i64[2, 3]"});
  expect_error([&] { return masked_fill(f32({3}), boolean({2, 3}), 1.0); }, "masked_fill", {"[2, 3]", "[3]"});
  expect_error([&] { return masked_fill(f32({2, 3}), boolean({3, 1}), 1.0); }, "masked_fill", {"[2, 3]", "[3, 1]"});
  expect_error([&] { return masked_fill(i64({2}), boolean({2}), std::numeric_limits<double>::quiet_NaN()); },
               "masked_fill", {"cannot be converted to i64", "i64[2]"});
  expect_error([&] { return masked_fill(i64({2}), boolean({2}), 1e30); }, "masked_fill", {"i64[2]"});
}

TEST_P(IndexErrors, OneHot) {
  expect_error([&] { return one_hot(i64({3}), -1); }, "one_hot", {"num_classes", "-1", "i64[3]", "inferred"});
  expect_error([&] { return one_hot(i64({3}), 0); }, "one_hot", {"num_classes", "i64[3]"});
  expect_error([&] { return one_hot(f32({3}), 4); }, "one_hot", {"i64 index", "f32[3]"});
}

TEST_P(IndexErrors, SortAndTopk) {
  expect_error([&] { return sort(f32({2, 3}), 2).first; }, "sort", {"dim 2", "out of range", "f32[2, 3]"});
  expect_error([&] { return topk(f32({2, 3}), 4).first; }, "topk", {"k = 4", "size 3", "f32[2, 3]"});
  expect_error([&] { return topk(f32({2, 3}), -1).first; }, "topk", {"k = -1", "f32[2, 3]"});
  expect_error([&] { return topk(f32({2, 3}), 3, 0).first; }, "topk", {"k = 3", "dim 0", "size 2"});
  expect_error([&] { return topk(boolean({4}), 1).first; }, "topk", {"bool[4]"});
  expect_error([&] { return topk(f32({}), 2).first; }, "topk", {"k = 2", "size 1", "f32[]"});
}

TEST_P(IndexErrors, FailedCallLeavesInputsUsable) {
  Tensor x = from_vector(std::vector<float>{1, 2, 3}, Shape{3}, GetParam());
  Tensor bad_index = from_vector(std::vector<float>{0}, Shape{1}, GetParam());
  EXPECT_THROW((void)gather(x, 0, bad_index), Error);
  EXPECT_EQ(x.to_vector<float>().get(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(sort(x, 0, true).first.to_vector<float>().get(), (std::vector<float>{3, 2, 1}));
}

INSTANTIATE_TEST_SUITE_P(Devices, IndexErrors, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
