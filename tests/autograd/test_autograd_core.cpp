// The autograd core with the test's own rules (core_rules.h): recording, backward order and
// accumulation, Gradients, misuse errors, no-grad and detach, in-place safety, freeing of saved
// values, no reference cycles, and threads. Reference gradients come from PyTorch
// (tests/data/gen_autograd_core.py).
#include <gtest/gtest.h>

#include "kiln/autograd/autograd.h"
#include "core_rules.h"
#include "models.h"
#include "support/reference.h"

namespace kiln {
namespace {

using test::values;

class AutogradCore : public ::testing::Test {
 protected:
  test::CoreRules rules_;
};

::testing::AssertionResult expect_throws_with(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    if (std::string(e.what()).find(needle) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "message '" << e.what() << "' lacks '" << needle << "'";
  }
  return ::testing::AssertionFailure() << "no kiln::Error thrown";
}

TEST_F(AutogradCore, MlpMatchesPyTorch) {
  const test::RefCase c = test::core_case("mlp");
  const Tensor x = test::make_tensor(c.inputs[0]);
  std::vector<Tensor> ps;
  for (int i = 1; i <= 4; ++i) ps.push_back(test::make_tensor(c.inputs[i]));
  std::vector<Tensor> leaves;
  for (const Tensor& p : ps) leaves.push_back(require_grad(p));
  const Tensor h = relu(add(matmul(x, leaves[0]), leaves[1]));
  const Tensor loss = add(mean(sigmoid(add(matmul(h, leaves[2]), leaves[3]))), sum(exp(mul(leaves[2], 0.5))));
  const Gradients g = backward(loss);
  EXPECT_EQ(g.size(), 4u);
  EXPECT_FALSE(g.contains(x));
  // Keyed by entity: the plain parameter handles answer as well as the leaves.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(test::matches(g.get(ps[i]), c.outputs[i])) << "param " << i;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(test::matches(g.get(leaves[i]), c.outputs[i])) << "leaf " << i;
}

TEST_F(AutogradCore, TensorUsedManyTimesAccumulates) {
  const test::RefCase c = test::core_case("diamond");
  const Tensor x = require_grad(test::make_tensor(c.inputs[0]));
  const Tensor loss = sum(sub(mul(add(mul(x, x), exp(x)), x), x));
  EXPECT_TRUE(test::matches(backward(loss).get(x), c.outputs[0]));
}

TEST_F(AutogradCore, BroadcastingGradientsSumBack) {
  const test::RefCase c = test::core_case("broadcast");
  const Tensor a = require_grad(test::make_tensor(c.inputs[0]));
  const Tensor b = require_grad(test::make_tensor(c.inputs[1]));
  const Tensor cc = require_grad(test::make_tensor(c.inputs[2]));
  const Gradients g = backward(sum(mul(add(a, b), cc)));
  EXPECT_TRUE(test::matches(g.get(a), c.outputs[0]));
  EXPECT_TRUE(test::matches(g.get(b), c.outputs[1]));
  EXPECT_TRUE(test::matches(g.get(cc), c.outputs[2]));
}

TEST_F(AutogradCore, NonScalarOutputWithSeed) {
  const test::RefCase c = test::core_case("seeded");
  const Tensor x = require_grad(test::make_tensor(c.inputs[0]));
  const Tensor y = mul(sigmoid(x), 2.0);
  EXPECT_TRUE(test::matches(backward(y, test::make_tensor(c.inputs[1])).get(x), c.outputs[0]));
}

TEST_F(AutogradCore, LayoutOps) {
  const test::RefCase c = test::core_case("layout");
  const Tensor x = require_grad(test::make_tensor(c.inputs[0]));
  const Tensor w = require_grad(test::make_tensor(c.inputs[1]));
  const Gradients g = backward(sum(mul(reshape(transpose(x, 0, 1), {6}), w)));
  EXPECT_TRUE(test::matches(g.get(x), c.outputs[0]));
  EXPECT_TRUE(test::matches(g.get(w), c.outputs[1]));
}

TEST_F(AutogradCore, LeafIsItsOwnGradient) {
  const Tensor x = require_grad(full(Shape{}, 3.0));
  EXPECT_EQ(values(backward(x).get(x)), std::vector<float>{1.0f});
}

TEST_F(AutogradCore, GradientsAddAndTake) {
  const Tensor a = require_grad(full(Shape{2}, 1.0));
  const Tensor b = require_grad(full(Shape{3}, 2.0));
  const Tensor c = require_grad(full(Shape{1}, 4.0));
  Gradients g1 = backward(add(sum(mul(a, 3.0)), sum(mul(b, b))));  // da = 3, db = 2b = 4
  const Gradients g2 = backward(sum(mul(a, c)));                   // da = c = 4, dc = sum(a) = 2
  const Gradients total = g1 + g2;
  EXPECT_EQ(values(total.get(a)), (std::vector<float>{7.0f, 7.0f}));
  EXPECT_EQ(values(total.get(b)), (std::vector<float>{4.0f, 4.0f, 4.0f}));
  EXPECT_EQ(values(total.get(c)), std::vector<float>{2.0f});
  EXPECT_EQ(values(g1.get(a)), (std::vector<float>{3.0f, 3.0f}));  // + copies, never writes g1

  Gradients rest = total;
  const Gradients taken = rest.take({a, c});
  EXPECT_EQ(taken.size(), 2u);
  EXPECT_TRUE(taken.contains(a) && taken.contains(c) && !taken.contains(b));
  EXPECT_EQ(rest.size(), 1u);
  EXPECT_TRUE(rest.contains(b));
  EXPECT_TRUE(expect_throws_with([&] { rest.take({a}); }, "parameter #0"));
  EXPECT_EQ(rest.size(), 1u);
}

TEST_F(AutogradCore, MisuseIsAClearError) {
  const Tensor plain = full(Shape{2, 2}, 1.0);
  EXPECT_TRUE(expect_throws_with([&] { backward(sum(plain)); }, "has no backward graph"));
  EXPECT_TRUE(expect_throws_with([&] { require_grad(full(Shape{2}, 1.0, {DType::i64})); }, "only floating"));
  EXPECT_TRUE(expect_throws_with([&] { require_grad(Tensor()); }, "undefined"));

  const Tensor x = require_grad(full(Shape{2, 2}, 1.0));
  const Tensor unused = require_grad(full(Shape{3}, 1.0));
  const Tensor y = mul(x, 2.0);
  EXPECT_TRUE(expect_throws_with([&] { backward(y); }, "needs a scalar"));
  EXPECT_TRUE(expect_throws_with([&] { backward(y, full(Shape{4}, 1.0)); }, "seed gradient must be"));
  const Gradients g = backward(sum(y));
  EXPECT_TRUE(expect_throws_with([&] { g.get(unused); }, "took no part"));
  EXPECT_TRUE(expect_throws_with([&] { g.get(plain); }, "took no part"));
}

TEST_F(AutogradCore, SecondBackwardOverFreedValuesIsAnError) {
  const Tensor x = require_grad(full(Shape{4}, 0.5));
  const Tensor loss = sum(mul(exp(x), x));  // exp and mul keep values
  backward(loss);
  EXPECT_TRUE(expect_throws_with([&] { backward(loss); }, "already used by an earlier backward"));
  // A graph that keeps nothing can run again (like PyTorch).
  const Tensor y = sum(add(x, 1.0));
  EXPECT_EQ(values(backward(y).get(x)), std::vector<float>(4, 1.0f));
  EXPECT_EQ(values(backward(y).get(x)), std::vector<float>(4, 1.0f));
}

TEST_F(AutogradCore, NoGradAndDetach) {
  const Tensor x = require_grad(full(Shape{3}, 2.0));
  EXPECT_TRUE(requires_grad(x));
  EXPECT_TRUE(is_leaf(x));
  EXPECT_TRUE(require_grad(x).id() == x.id());
  {
    NoGradGuard guard;
    EXPECT_FALSE(grad_enabled());
    EXPECT_FALSE(requires_grad(mul(x, 3.0)));
  }
  EXPECT_TRUE(grad_enabled());
  const Tensor y = mul(x, 3.0);
  EXPECT_TRUE(requires_grad(y));
  EXPECT_FALSE(is_leaf(y));
  const Tensor d = detach(y);
  EXPECT_FALSE(requires_grad(d));
  EXPECT_EQ(d.id(), y.id());  // same entity, no copy
  EXPECT_EQ(values(d), std::vector<float>(3, 6.0f));
  // Through a detached path no gradient flows: d(sum(y + d))/dx = 3.
  EXPECT_EQ(values(backward(sum(add(y, d))).get(x)), std::vector<float>(3, 3.0f));
  // Plain tensors stay plain: inference records nothing.
  EXPECT_FALSE(requires_grad(add(full(Shape{2}, 1.0), 1.0)));
  // require_grad on a recorded tensor starts a new leaf.
  const Tensor z = require_grad(mul(x, 2.0));
  EXPECT_TRUE(is_leaf(z));
  EXPECT_EQ(values(backward(sum(mul(z, 5.0))).get(z)), std::vector<float>(3, 5.0f));
}

TEST_F(AutogradCore, KeptInputIsNeverWrittenInPlace) {
  // relu keeps its input; the caller then hands its last handle to another op, which must not
  // overwrite the kept value.
  const Tensor x = require_grad(from_vector(std::vector<float>{-1.0f, 2.0f, -3.0f, 4.0f}, Shape{4}));
  Tensor h = mul(x, 1.0);
  const Tensor r = relu(h);
  const Tensor h2 = sub(std::move(h), 10.0);  // all negative now, if it were written in place
  const Tensor loss = add(sum(r), mul(sum(h2), 0.0));
  EXPECT_EQ(values(backward(loss).get(x)), (std::vector<float>{0.0f, 1.0f, 0.0f, 1.0f}));
}

TEST_F(AutogradCore, KeptValuesAreFreedByBackward) {
  const Device cpu = Device::cpu();
  sync(cpu).get();
  const std::size_t base = memory_stats(cpu).bytes_in_use;
  constexpr std::int64_t n = 1 << 18;  // 1 MiB per tensor
  const Tensor x = require_grad(full(Shape{n}, 0.25));
  Tensor y = x;
  for (int i = 0; i < 8; ++i) y = exp(mul(y, 0.5));  // mul keeps nothing (scalar form), exp its output
  const Tensor loss = sum(y);
  sync(cpu).get();
  const std::size_t before_backward = memory_stats(cpu).bytes_in_use - base;
  EXPECT_GE(before_backward, 9u * 4 * n);  // x and 8 kept outputs
  const Gradients g = backward(loss);
  sync(cpu).get();
  const std::size_t after = memory_stats(cpu).bytes_in_use - base;
  EXPECT_LE(after, 3u * 4 * n + 65536);  // x, y and the gradient; the loss is alive, its graph empty
}

TEST_F(AutogradCore, DroppedGraphsLeaveNothing) {
  // Kept outputs (exp) must not form cycles with the graph: everything goes when the handles go.
  const Device cpu = Device::cpu();
  sync(cpu).get();
  const std::size_t base = memory_stats(cpu).bytes_in_use;
  {
    const Tensor x = require_grad(full(Shape{1 << 16}, 0.5));
    Tensor y = x;
    for (int i = 0; i < 10; ++i) y = sigmoid(exp(y));
    sync(cpu).get();
    EXPECT_GT(memory_stats(cpu).bytes_in_use, base);
  }
  sync(cpu).get();
  EXPECT_EQ(memory_stats(cpu).bytes_in_use, base);
}

TEST_F(AutogradCore, DeepGraphsAreDroppedWithoutRecursion) {
  const Tensor x = require_grad(full(Shape{1}, 0.0));
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = mul(y, y);  // keeps every input
  y = Tensor();
  sync(Device::cpu()).get();
}

TEST_F(AutogradCore, ThreadsMatchOneThread) {
  // Each thread computes the gradients of its own shard with its own handles to the parameters;
  // the sum equals one thread doing the shards in turn, bit for bit (the same ops in the same
  // order), and the whole batch at once within float tolerance (reduction order differs).
  const std::vector<Tensor> params = test::mlp_params({16, 32, 32, 4}, 7);
  Generator gen(11);
  for (int n : {2, 3, 8}) {
    std::vector<Tensor> shards;
    for (int t = 0; t < n; ++t) shards.push_back(randn(Shape{8, 16}, gen));
    const Gradients threaded = test::mlp_gradients_threaded(params, shards);
    Gradients sequential;
    for (const Tensor& s : shards) sequential += test::mlp_gradients(params, s);
    const Gradients whole = test::mlp_gradients(params, cat(shards, 0));
    for (std::size_t p = 0; p < params.size(); ++p) {
      const std::vector<float> got = values(threaded.get(params[p]));
      EXPECT_EQ(got, values(sequential.get(params[p]))) << n << " threads, param " << p;
      const std::vector<float> want = values(whole.get(params[p]));
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::abs(want[i]))
            << n << " threads, param " << p << " [" << i << "]";
    }
  }
}

}  // namespace
}  // namespace kiln
