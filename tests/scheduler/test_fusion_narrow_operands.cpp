// A fused step may write its output over an operand's slot only when the operand's elements are
// at least as wide: where(gt(x, 0), g, 0) once wrote f32 results over the bool mask it was still
// reading (found by autograd's relu rule).
#include <gtest/gtest.h>

#include "kiln/engine/kiln.h"

namespace kiln {
namespace {

TEST(FusionNarrowOperands, WhereOnAFusedComparison) {
  const Tensor x = from_vector(std::vector<float>{-1.0f, 2.0f, -3.0f, 4.0f, 5.0f, -6.0f, 7.0f, 8.0f}, Shape{8});
  const Tensor g = full(Shape{8}, 1.0);
  const std::vector<float> want{0, 1, 0, 1, 1, 0, 1, 1};
  EXPECT_EQ(where(gt(x, 0.0), g, 0.0).to_vector<float>().get(), want);
  EXPECT_EQ(where(gt(x, 0.0), g, zeros(Shape{8})).to_vector<float>().get(), want);
  EXPECT_EQ(cast(cast(gt(x, 0.0), DType::i64), DType::f32).to_vector<float>().get(), want);
}

}  // namespace
}  // namespace kiln
