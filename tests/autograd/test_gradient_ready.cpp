// backward(loss, on_ready): each leaf's gradient is reported once, complete (every use of the
// leaf summed), equal to what backward returns; leaves that take no part are not reported.
// Reference gradients are the closed forms written beside each case.
#include <gtest/gtest.h>

#include <map>

#include "kiln/autograd/autograd.h"
#include "support/reference.h"

namespace kiln {
namespace {

std::vector<double> host(const Tensor& t) { return test::host_values(t); }

TEST(GradientReady, EachLeafOnceWithItsCompleteGradient) {
  const std::vector<float> xs{1, 2, 3}, w1s{0.5f, -1, 2}, w2s{3, 0.25f, -2};
  const Tensor x = from_vector(std::vector<float>(xs), Shape{3});
  const Tensor w1 = require_grad(from_vector(std::vector<float>(w1s), Shape{3}));
  const Tensor w2 = require_grad(from_vector(std::vector<float>(w2s), Shape{3}));
  const Tensor unused = require_grad(from_vector(std::vector<float>{1, 1, 1}, Shape{3}));
  // loss = sum(w1 * x * w2) + sum(w2 * w2): w2 is used three times, w1 once.
  const Tensor loss = add(sum(mul(mul(w1, x), w2)), sum(mul(w2, w2)));

  std::map<EntityId, std::vector<Tensor>> reported;
  const Gradients g = backward(loss, [&](EntityId leaf, const Tensor& grad) { reported[leaf].push_back(grad); });

  ASSERT_EQ(reported.size(), 2u);
  ASSERT_EQ(reported[w1.id()].size(), 1u);
  ASSERT_EQ(reported[w2.id()].size(), 1u);
  EXPECT_EQ(reported.count(unused.id()), 0u);
  // d/dw1 = x * w2; d/dw2 = w1 * x + 2 * w2.
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(host(reported[w1.id()][0])[i], xs[i] * w2s[i], 1e-6);
    EXPECT_NEAR(host(reported[w2.id()][0])[i], w1s[i] * xs[i] + 2 * w2s[i], 1e-6);
  }
  EXPECT_EQ(host(g.get(w1)), host(reported[w1.id()][0]));
  EXPECT_EQ(host(g.get(w2)), host(reported[w2.id()][0]));
}

TEST(GradientReady, ALeafRootIsReported) {
  const Tensor w = require_grad(from_vector(std::vector<float>{4}, Shape{1}));
  int calls = 0;
  const Gradients g = backward(w, [&](EntityId leaf, const Tensor& grad) {
    ++calls;
    EXPECT_EQ(leaf, w.id());
    EXPECT_EQ(host(grad), std::vector<double>{1.0});
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(host(g.get(w)), std::vector<double>{1.0});
}

TEST(GradientReady, ANonScalarLossIsAnError) {
  const Tensor w = require_grad(from_vector(std::vector<float>{1, 2}, Shape{2}));
  EXPECT_THROW(backward(mul(w, 2.0), [](EntityId, const Tensor&) {}), Error);
}

}  // namespace
}  // namespace kiln
