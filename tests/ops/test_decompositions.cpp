// The decomposition rules (ops/decompositions.h) as oracles of the native kernels: each op runs
// natively on the CPU and again with the capability withheld (DeviceBackend::set_capabilities),
// so that the executor runs the rule's messages in its place; both give the same values, and the
// engine's ops_decomposed counter shows that the capability query chose the rule, and only where
// the capability was missing. (The native kernels themselves are checked against PyTorch in
// test_linalg.cpp, test_conv.cpp and test_pool_native.cpp.)
#include <gtest/gtest.h>

#include <functional>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/runtime.h"
#include "kiln/engine/submit.h"
#include "ops/conv_oracle.h"
#include "support/conv_calls.h"
#include "support/fusion_scope.h"
#include "support/reference.h"

namespace kiln {
namespace {

// Sums of up to ~1000 products of normal values, in another order than the native kernel's.
constexpr test::Tolerance kRuleAgrees{1e-4, 1e-4};

using Withhold = std::function<void(DeviceCapabilities&)>;

// While it lives, the CPU lacks what `withhold` takes out of its capabilities.
class WithheldCapability {
 public:
  explicit WithheldCapability(const Withhold& withhold)
      : backend_(*Engine::get().runtime(Device::cpu(), "test").backend) {
    sync(Device::cpu()).get();  // the executor reads the capabilities only while it runs a batch
    saved_ = backend_.capabilities();
    DeviceCapabilities c = saved_;
    withhold(c);
    backend_.set_capabilities(c);
  }
  ~WithheldCapability() {
    sync(Device::cpu()).get();
    backend_.set_capabilities(saved_);
  }

 private:
  DeviceBackend& backend_;
  DeviceCapabilities saved_;
};

void no_transposed_matmul(DeviceCapabilities& c) { c.matmul_transposed = DTypeSet{}; }
Withhold without(std::initializer_list<OpKind> kinds) {
  // A copy: the list's array ends with the caller's full expression, the Withhold may not.
  return [ops = std::vector<OpKind>(kinds)](DeviceCapabilities& c) {
    for (OpKind k : ops) c.ops.reset(static_cast<std::size_t>(k));
  };
}

std::uint64_t decomposed() {
  sync(Device::cpu()).get();
  return counters(Device::cpu()).ops_decomposed;
}

std::vector<std::vector<double>> values_of(const std::vector<Tensor>& ts) {
  std::vector<std::vector<double>> v;
  for (const Tensor& t : ts) v.push_back(test::host_values(t));
  return v;
}

// `run` natively, then with the capability withheld: the same values; at least `rules`
// decompositions without the capability, none with it.
void expect_rule_agrees(const std::function<std::vector<Tensor>()>& run, const Withhold& withhold,
                        std::uint64_t rules = 1) {
  const std::uint64_t before = decomposed();
  const auto native = values_of(run());
  EXPECT_EQ(decomposed(), before) << "a rule ran where the CPU has the op";
  std::vector<std::vector<double>> rewritten;
  {
    const WithheldCapability scope(withhold);
    rewritten = values_of(run());
  }
  EXPECT_GE(decomposed() - before, rules);
  ASSERT_EQ(native.size(), rewritten.size());
  for (std::size_t i = 0; i < native.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    EXPECT_TRUE(test::values_close(rewritten[i], native[i], kRuleAgrees));
  }
}

struct TransposedCase {
  const char* name;
  Shape a, b;
  MatmulOptions options;
};

TEST(Decompositions, MatmulTransposedIsPermuteAndMatmul) {
  const TransposedCase cases[] = {
      {"linear", {3, 4}, {5, 4}, {.transpose_b = true}},
      {"weight_grad", {4, 3}, {4, 5}, {.transpose_a = true}},
      {"both", {4, 3}, {5, 4}, {.transpose_a = true, .transpose_b = true}},
      {"batched_a_shared_b", {2, 4, 3}, {4, 5}, {.transpose_a = true}},
      {"broadcast_both", {3, 1, 4, 2}, {1, 5, 2, 4}, {.transpose_a = true, .transpose_b = true}},
  };
  Generator gen(31);
  for (const TransposedCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor a = randn(c.a, gen), b = randn(c.b, gen);
    expect_rule_agrees([&] { return std::vector<Tensor>{matmul(a, b, c.options)}; }, no_transposed_matmul);
  }
}

// Operands handed over (temporaries) pass to the rule's last reader; one entity as both operands
// (a Gram matrix x xᵀ) is read by the permute and the matmul and ends after both.
TEST(Decompositions, MatmulTransposedHandsItsOperandsOver) {
  const test::FusionScope fusion(true);
  Generator gen(32);
  const Tensor x = randn(Shape{6, 5}, gen);
  expect_rule_agrees(
      [&] {
        return std::vector<Tensor>{matmul(x, x, {.transpose_b = true}),
                                   matmul(mul(x, 2.0), add(x, 1.0), {.transpose_a = true}),
                                   relu(add(matmul(x, mul(x, 0.5), {.transpose_b = true}), 1.0))};
      },
      no_transposed_matmul, 3);
}

TEST(Decompositions, ConvIsUnfoldAndMatmul) {
  Generator gen(33);
  for (const test::ConvShape& s : test::conv_shapes()) {
    SCOPED_TRACE(s.name);
    const std::vector<Tensor> in = test::conv_inputs(s, gen);
    expect_rule_agrees([&] { return std::vector<Tensor>{test::api_conv(s, in)}; }, without({OpKind::conv}));
  }
}

// A transposed convolution is one conv_input_grad op (output_padding below the stride); without
// the op and without transposed reads, its rule's transposed matmul takes a rule of its own.
TEST(Decompositions, ConvInputGradIsMatmulAndFold) {
  Generator gen(34);
  for (const test::ConvTransposeShape& s : test::conv_transpose_shapes()) {
    SCOPED_TRACE(s.name);
    const std::vector<Tensor> in = test::conv_transpose_inputs(s, gen);
    const auto run = [&] { return std::vector<Tensor>{test::api_conv_transpose(s, in)}; };
    expect_rule_agrees(run, without({OpKind::conv_input_grad}));
    expect_rule_agrees(
        run,
        [](DeviceCapabilities& c) {
          without({OpKind::conv_input_grad})(c);
          no_transposed_matmul(c);
        },
        2);
  }
}

// A convolution's gradients come from conv_input_grad and conv_weight_grad (autograd's conv
// rule): every one of them decomposed, the forward too.
TEST(Decompositions, ConvGradientsAreUnfoldMatmulAndFold) {
  Generator gen(35);
  for (const test::ConvShape& s : test::conv_shapes()) {
    SCOPED_TRACE(s.name);
    std::vector<Tensor> leaves;
    for (const Tensor& t : test::conv_inputs(s, gen)) leaves.push_back(require_grad(t));
    Shape out;
    {
      const NoGradGuard no_grad;
      out = test::api_conv(s, leaves).shape();
    }
    const Tensor seed = randn(out, gen);
    const auto run = [&] {
      const Gradients g = backward(test::api_conv(s, leaves), seed);
      std::vector<Tensor> grads;
      for (const Tensor& leaf : leaves) grads.push_back(g.get(leaf));
      return grads;
    };
    expect_rule_agrees(run, without({OpKind::conv_weight_grad}));
    expect_rule_agrees(run, without({OpKind::conv, OpKind::conv_input_grad, OpKind::conv_weight_grad}), 3);
  }
}

// Pooling: every case of tests/data/gen_pool.py natively and decomposed (values and indices:
// ties, NaN and -inf windows, ceil_mode's overhang), the decomposition also against torch.
TEST(Decompositions, PoolIsUnfoldAndReductions) {
  const Withhold forwards = without({OpKind::max_pool, OpKind::avg_pool});
  for (const test::RefCase& c : test::load_cases("pool.json")) {
    SCOPED_TRACE(c.name);
    const Tensor x = test::make_tensor(c.inputs[0]);
    const auto run = [&] { return test::call_conv_op(c.op, c.attrs, {x}); };
    expect_rule_agrees(run, forwards);
    const WithheldCapability scope(forwards);
    const std::vector<Tensor> out = run();
    for (std::size_t i = 0; i < out.size(); ++i)
      EXPECT_TRUE(test::matches(out[i], c.outputs[i], {1e-6, 1e-6})) << "output " << i << " against torch";
  }
}

// Their gradients through autograd's pool rules: the gradient ops decomposed (so backward runs
// max_pool_grad and avg_pool_grad: the rule counts them), then every pooling op.
TEST(Decompositions, PoolGradientsAreScatterAddAndFold) {
  for (const test::RefCase& c : test::load_cases("pool.json")) {
    SCOPED_TRACE(c.name);
    const Tensor x = require_grad(test::make_tensor(c.inputs[0]));
    const Tensor seed = test::make_tensor(c.inputs[1]);
    const auto run = [&] {
      const Gradients g = backward(test::call_conv_op(c.op, c.attrs, {x}).at(0), seed);
      return std::vector<Tensor>{g.get(x)};
    };
    expect_rule_agrees(run, without({OpKind::max_pool_grad, OpKind::avg_pool_grad}));
    const Withhold all = without({OpKind::max_pool, OpKind::avg_pool, OpKind::max_pool_grad, OpKind::avg_pool_grad});
    expect_rule_agrees(run, all, 2);
    const WithheldCapability scope(all);
    EXPECT_TRUE(test::matches(run().at(0), c.outputs.back(), {1e-5, 1e-6})) << "against torch";
  }
}

// A recorded pass (a served model's forward) is decomposed once, when its plan is made at the
// first replay; every replay runs the same messages and gives the native values.
TEST(Decompositions, RecordedPassIsDecomposedOnce) {
  Generator gen(36);
  const Tensor w = randn(Shape{7, 5}, gen), b = randn(Shape{7}, gen), x = randn(Shape{3, 5}, gen);
  const auto forward = [&](const Tensor& in) { return relu(add(matmul(in, w, {.transpose_b = true}), b)); };
  const std::vector<double> native = test::host_values(forward(x));
  const WithheldCapability scope(no_transposed_matmul);
  const RecordedPass pass = RecordedPass::record(forward, x.shape());
  const std::uint64_t before = decomposed();
  for (int replay = 0; replay < 3; ++replay) EXPECT_TRUE(test::values_close(test::host_values(pass(x)), native, kRuleAgrees));
  EXPECT_EQ(decomposed() - before, 1u);
}

// batch_norm and batch_norm_backward (nn::batch_norm in training mode): per-channel statistics
// and sums, then elementwise passes, against mean, var, sum and elementwise ops; every rank, runs
// with and without vector tails, and a copy of x and dy handed over, so that y and dx may take
// their buffers.
TEST(Decompositions, BatchNormIsReductionsAndElementwise) {
  Generator gen(37);
  const Shape shapes[] = {{6, 4}, {3, 5, 7}, {2, 3, 5, 19}, {2, 2, 3, 2, 5}, {2, 3, 16, 4}};
  OpAttrs eps;
  eps.scalar = 1e-3;
  for (const Shape& s : shapes) {
    SCOPED_TRACE(s.str());
    const Tensor x = add(mul(randn(s, gen), 2.0), 0.5), dy = randn(s, gen);
    const Tensor w = randn(Shape{s[1]}, gen), b = randn(Shape{s[1]}, gen);
    const auto run = [&] {
      std::vector<Tensor> out;
      for (int handed_over = 0; handed_over < 2; ++handed_over) {
        Tensor fwd[3] = {handed_over ? mul(x, 1.0) : x, w, b};
        for (Tensor& t : detail::submit(OpKind::batch_norm, fwd, 3, eps, Device::cpu())) out.push_back(std::move(t));
        Tensor bwd[3] = {handed_over ? mul(dy, 1.0) : dy, x, w};
        for (Tensor& t : detail::submit(OpKind::batch_norm_backward, bwd, 3, eps, Device::cpu()))
          out.push_back(std::move(t));
      }
      return out;
    };
    expect_rule_agrees(run, without({OpKind::batch_norm, OpKind::batch_norm_backward}), 4);
  }
}

}  // namespace
}  // namespace kiln
