// The index family against PyTorch (tests/data/gen_index.py), in-place runs, and index values
// out of range, which only the kernel can see and which reach the output's future.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/index_cases.h"

namespace kiln {
namespace {

using test::matches;
using test::RefCase;
using test::Tolerance;

// Index ops move values without arithmetic, so they must match exactly; scatter_add's f32 sums
// may differ from PyTorch's only by summation order: rtol 1e-6, atol 1e-6.
constexpr Tolerance kExact{0.0, 0.0};
constexpr Tolerance kScatterAddTolerance{1e-6, 1e-6};

class Index : public ::testing::TestWithParam<Device> {};

TEST_P(Index, EveryOpHasReferenceCases) {
  for (const char* op : {"gather", "scatter", "scatter_add", "index_select", "masked_fill", "one_hot", "sort", "topk"})
    EXPECT_GE(test::cases_for("index.json", op).size(), 4u) << op;
}

Tolerance index_tolerance(const RefCase& c) { return c.op == "scatter_add" ? kScatterAddTolerance : kExact; }

// Inputs the caller still holds are never written.
TEST_P(Index, MatchesTorch) {
  const auto cases = test::load_cases("index.json");
  ASSERT_GE(cases.size(), 60u);
  for (const RefCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> kept;
    const std::vector<Tensor> outs = test::run_index_case(c, GetParam(), &kept);
    ASSERT_EQ(outs.size(), c.outputs.size());
    for (std::size_t i = 0; i < outs.size(); ++i)
      EXPECT_TRUE(matches(outs[i], c.outputs[i], index_tolerance(c))) << "output " << i;
    for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_TRUE(matches(kept[i], c.inputs[i], kExact)) << "input " << i;
  }
}

// Handing the inputs over lets scatter, scatter_add, masked_fill, sort and topk (when k is the
// whole dim) write into the input's buffer.
TEST_P(Index, HandedOverInputsMatchTorch) {
  for (const RefCase& c : test::load_cases("index.json")) {
    SCOPED_TRACE(c.name);
    const std::uint64_t reuses = counters(GetParam()).inplace_reuses;
    const std::vector<Tensor> outs = test::run_index_case(c, GetParam());
    for (std::size_t i = 0; i < outs.size(); ++i)
      EXPECT_TRUE(matches(outs[i], c.outputs[i], index_tolerance(c))) << "output " << i;
    const Shape in_shape = test::json_shape(c.inputs[0]);
    const bool may_reuse =
        c.op == "scatter" || c.op == "scatter_add" || c.op == "masked_fill" || c.op == "sort" || c.op == "topk";
    if (may_reuse && in_shape == test::json_shape(c.outputs[0]) && in_shape.numel() > 0) {
      EXPECT_GT(counters(GetParam()).inplace_reuses, reuses) << "expected the input's buffer to be reused";
    }
  }
}

// The executor may give scatter's output the buffer of the index or of src instead of x's (same
// shape and dtype, handed over): the kernel must still read them before copying x in.
TEST_P(Index, ScatterWhoseOutputReusesTheIndexOrSrcBuffer) {
  const Device d = GetParam();
  const Tensor x = from_vector(std::vector<std::int64_t>{10, 11, 12, 13, 14, 15}, Shape{2, 3}, d);
  const Tensor src = from_vector(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}, Shape{2, 3}, d);
  // torch.scatter(x, 1, [[2, 0, 1], [1, 2, 0]], src) = [[2, 3, 1], [6, 4, 5]]
  const std::vector<std::int64_t> want{2, 3, 1, 6, 4, 5};
  const std::uint64_t reuses = counters(d).inplace_reuses;
  Tensor index = from_vector(std::vector<std::int64_t>{2, 0, 1, 1, 2, 0}, Shape{2, 3}, d);
  EXPECT_EQ(scatter(x, 1, std::move(index), src).to_vector<std::int64_t>().get(), want);
  EXPECT_EQ(counters(d).inplace_reuses, reuses + 1);

  Tensor src_moved = from_vector(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}, Shape{2, 3}, d);
  const Tensor index_kept = from_vector(std::vector<std::int64_t>{2, 0, 1, 1, 2, 0}, Shape{2, 3}, d);
  EXPECT_EQ(scatter(x, 1, index_kept, std::move(src_moved)).to_vector<std::int64_t>().get(), want);
  EXPECT_EQ(counters(d).inplace_reuses, reuses + 2);
  EXPECT_EQ(x.to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{10, 11, 12, 13, 14, 15}));
}

template <class Fn>
void expect_device_error(Fn&& read, const std::string& op, const std::vector<std::string>& fragments) {
  try {
    read();
    ADD_FAILURE() << "expected the read to fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), op);
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST_P(Index, IndexOutOfRangeReachesTheFuture) {
  const Device d = GetParam();
  const Tensor x = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{3, 4}, d);
  const Tensor bad = from_vector(std::vector<std::int64_t>{0, 7, 1, 2, 3, 0}, Shape{3, 2}, d);
  const Tensor negative = from_vector(std::vector<std::int64_t>{0, -1, 1, 2, 3, 0}, Shape{3, 2}, d);
  const Tensor src = ones(Shape{3, 2}, {DType::f32, d});

  Tensor g = gather(x, 1, bad);
  expect_device_error([&] { (void)g.to_vector<float>().get(); }, "gather",
                      {"index 7", "dim 1", "size 4", "f32[3, 4]", "i64[3, 2]"});
  // torch does not wrap negative indices of gather, scatter or index_select either.
  expect_device_error([&] { (void)gather(x, 1, negative).to_vector<float>().get(); }, "gather", {"index -1"});
  expect_device_error([&] { (void)scatter(x, 1, bad, src).to_vector<float>().get(); }, "scatter", {"index 7"});
  expect_device_error([&] { (void)scatter_add(x, -1, negative, src).to_vector<float>().get(); }, "scatter_add",
                      {"index -1", "dim 1"});
  const Tensor rows = from_vector(std::vector<std::int64_t>{2, 3}, Shape{2}, d);
  expect_device_error([&] { (void)index_select(x, 0, rows).to_vector<float>().get(); }, "index_select",
                      {"index 3", "dim 0", "size 3"});
  const Tensor classes = from_vector(std::vector<std::int64_t>{0, 5, 1}, Shape{3}, d);
  expect_device_error([&] { (void)one_hot(classes, 3).to_vector<std::int64_t>().get(); }, "one_hot",
                      {"class value 5", "[0, 3)", "i64[3]"});
  const Tensor neg_class = from_vector(std::vector<std::int64_t>{-1}, Shape{1}, d);
  expect_device_error([&] { (void)one_hot(neg_class, 3).to_vector<std::int64_t>().get(); }, "one_hot",
                      {"class value -1"});

  // Tensors computed from a failed one fail with the first error; in-place runs fail the same way.
  expect_device_error(
      [&] {
        (void)matmul(g, ones(Shape{2}, {DType::f32, d})).to_vector<float>().get();
      },
      "gather", {"index 7"});
  Tensor owned = from_vector(std::vector<float>(12, 1.0f), Shape{3, 4}, d);
  expect_device_error([&] { (void)scatter(std::move(owned), 1, bad, src).to_vector<float>().get(); }, "scatter",
                      {"index 7"});

  // The engine keeps serving.
  const Tensor good = from_vector(std::vector<std::int64_t>{3, 0, 1, 1, 2, 3}, Shape{3, 2}, d);
  EXPECT_EQ(gather(x, 1, good).to_vector<float>().get(), (std::vector<float>{3, 0, 5, 5, 10, 11}));
}

INSTANTIATE_TEST_SUITE_P(Devices, Index, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
