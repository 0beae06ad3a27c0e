// Autograd end to end with the real rule table (autograd/rules_<family>.cpp): gradients of
// models against PyTorch, per-thread gradients summed, checkpointing. These tests need the rule
// families; until they are merged the table is empty and these tests fail with "has no
// backward graph" — that is expected.
#include <gtest/gtest.h>

#include <cstdio>

#include "models.h"
#include "scenarios.h"
#include "support/reference.h"

namespace kiln {
namespace {

std::vector<Tensor> leaves_of(const test::RefCase& c, std::size_t first, std::size_t count) {
  std::vector<Tensor> out;
  for (std::size_t i = first; i < first + count; ++i) out.push_back(require_grad(test::make_tensor(c.inputs[i])));
  return out;
}

TEST(AutogradEndToEnd, MlpCrossEntropyMatchesPyTorch) {
  const test::RefCase c = test::core_case("mlp_xent");
  const Tensor x = test::make_tensor(c.inputs[0]);
  const Tensor onehot = test::make_tensor(c.inputs[1]);
  const std::vector<Tensor> ps = leaves_of(c, 2, 4);
  const Tensor logits = add(matmul(relu(add(matmul(x, ps[0]), ps[1])), ps[2]), ps[3]);
  const Tensor loss = neg(mean(sum(mul(log_softmax(logits, -1), onehot), {1})));
  const Gradients g = backward(loss);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(test::matches(g.get(ps[i]), c.outputs[i], {1e-5, 1e-6})) << "param " << i;
}

TEST(AutogradEndToEnd, CoreCasesMatchPyTorch) {
  {
    const test::RefCase c = test::core_case("mlp");
    const Tensor x = test::make_tensor(c.inputs[0]);
    const std::vector<Tensor> ps = leaves_of(c, 1, 4);
    const Tensor h = relu(add(matmul(x, ps[0]), ps[1]));
    const Tensor loss = add(mean(sigmoid(add(matmul(h, ps[2]), ps[3]))), sum(exp(mul(ps[2], 0.5))));
    const Gradients g = backward(loss);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(test::matches(g.get(ps[i]), c.outputs[i])) << "mlp param " << i;
  }
  {
    const test::RefCase c = test::core_case("diamond");
    const Tensor x = leaves_of(c, 0, 1)[0];
    EXPECT_TRUE(test::matches(backward(sum(sub(mul(add(mul(x, x), exp(x)), x), x))).get(x), c.outputs[0]));
  }
  {
    const test::RefCase c = test::core_case("broadcast");
    const std::vector<Tensor> v = leaves_of(c, 0, 3);
    const Gradients g = backward(sum(mul(add(v[0], v[1]), v[2])));
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(test::matches(g.get(v[i]), c.outputs[i])) << "broadcast input " << i;
  }
  {
    const test::RefCase c = test::core_case("seeded");
    const Tensor x = leaves_of(c, 0, 1)[0];
    EXPECT_TRUE(test::matches(backward(mul(sigmoid(x), 2.0), test::make_tensor(c.inputs[1])).get(x), c.outputs[0]));
  }
  {
    const test::RefCase c = test::core_case("layout");
    const std::vector<Tensor> v = leaves_of(c, 0, 2);
    const Gradients g = backward(sum(mul(reshape(transpose(v[0], 0, 1), {6}), v[1])));
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(test::matches(g.get(v[i]), c.outputs[i])) << "layout input " << i;
  }
}

TEST(AutogradEndToEnd, PerThreadGradientsSumToTheSingleThreadResult) {
  // Tolerance: the threaded sum equals one thread doing the shards in turn bit for bit; against
  // the whole batch at once (a different reduction order) within 1e-4 absolute + 1e-4 relative.
  const std::vector<Tensor> params = test::mlp_params({32, 64, 64, 10}, 21);
  Generator gen(4);
  for (int n = 2; n <= 8; ++n) {
    std::vector<Tensor> shards;
    for (int t = 0; t < n; ++t) shards.push_back(randn(Shape{16, 32}, gen));
    const Gradients threaded = test::mlp_gradients_threaded(params, shards);
    Gradients sequential;
    for (const Tensor& s : shards) sequential += test::mlp_gradients(params, s);
    const Gradients whole = test::mlp_gradients(params, cat(shards, 0));
    for (std::size_t p = 0; p < params.size(); ++p) {
      const std::vector<float> got = test::values(threaded.get(params[p]));
      EXPECT_EQ(got, test::values(sequential.get(params[p]))) << n << " threads, param " << p;
      const std::vector<float> want = test::values(whole.get(params[p]));
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::abs(want[i])) << n << " threads, param " << p;
    }
  }
}

// Checkpointing end to end (regions and policies): test_checkpoint.cpp.

}  // namespace
}  // namespace kiln
