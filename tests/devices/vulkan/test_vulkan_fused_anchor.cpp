// Anchored fusion on Vulkan (devices/vulkan/vk_anchor.cpp): a reduction that computes its
// elementwise prologue as it reads and applies its epilogue as it stores, a matmul that applies
// its epilogue as it stores. Each case runs with fusion on and off and must agree (within f32
// rounding: the driver may contract the fused expression differently), in one fused kernel, and
// without the intermediates in memory: the fused run's peak stays below the bytes of the value
// that running the group in steps (AnchoredSteps) would have stored.
#include <cstdint>
#include <functional>

#include "support/fusion_cases.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

constexpr Tol kFused{1e-5, 1e-6};
constexpr double kEps = 1e-5;

using Expression = std::function<Tensor(std::vector<Tensor>&)>;

// What one run did: its values, fused kernels and its peak memory above what it started with.
struct Outcome {
  std::vector<double> values;
  std::uint64_t fused_kernels = 0;
  std::uint64_t inplace_reuses = 0;
  std::size_t peak = 0;
};

// Runs `expr` on fresh copies of `inputs` (the expression may hand them over) on Vulkan.
Outcome run(const Expression& expr, const std::vector<Tensor>& inputs, bool fusion) {
  vk0().sync().get();
  const bool was = fusion_enabled();
  set_fusion(fusion);
  std::vector<Tensor> copies;
  for (const Tensor& t : inputs) copies.push_back(add(t, 0.0));
  vk0().sync().get();
  reset_peak_memory(vk0());
  const MemoryStats start = memory_stats(vk0());
  const EngineCounters before = counters(vk0());
  const std::vector<float> got = expr(copies).to_vector<float>().get();
  const EngineCounters after = counters(vk0());
  set_fusion(was);
  Outcome o;
  o.values.assign(got.begin(), got.end());
  o.fused_kernels = after.fused_kernels - before.fused_kernels;
  o.inplace_reuses = after.inplace_reuses - before.inplace_reuses;
  o.peak = memory_stats(vk0()).peak_in_use - start.bytes_in_use;
  return o;
}

Tensor vk_randn(Shape s, std::uint64_t seed) {
  Generator gen(seed);
  return randn(s, gen, {DType::f32, vk0()});
}

// One fused kernel, the unfused values, and a peak below `stepped_bytes` (0: not checked).
Outcome expect_fused(const Expression& expr, const std::vector<Tensor>& inputs, std::size_t stepped_bytes) {
  // Unfused first: a matmul autotunes its shape class then, not in the fused run's peak.
  const Outcome plain = run(expr, inputs, false);
  const Outcome fused = run(expr, inputs, true);
  EXPECT_EQ(fused.fused_kernels, 1u);
  EXPECT_EQ(plain.fused_kernels, 0u);
  EXPECT_TRUE(close(fused.values, plain.values, kFused));
  if (stepped_bytes) {
    EXPECT_LT(fused.peak, stepped_bytes) << "an intermediate went through memory";
  }
  return fused;
}

std::size_t bytes(const Shape& s) { return static_cast<std::size_t>(s.numel()) * 4; }

// The scheduler suite's PyTorch cases (tests/data/fusion.json), each in one fused kernel here
// too. Tolerance: the device's exp, erf and log are within a few ulp of PyTorch's, and the
// sums run in another order.
TEST(VulkanFusedAnchor, MatchesPyTorch) {
  KILN_REQUIRE_VULKAN();
  const std::vector<RefCase> cases = load_cases("fusion.json");
  ASSERT_EQ(cases.size(), fusion_cases().size());
  for (const FusionCase& n : fusion_cases()) {
    SCOPED_TRACE(n.name);
    const RefCase* c = find_case(cases, n.name);
    ASSERT_NE(c, nullptr);
    std::vector<Tensor> inputs;
    for (const Json& j : c->inputs) inputs.push_back(make_tensor(j, vk0()));
    const Outcome fused = run([&](std::vector<Tensor>& in) { return n.expr(in); }, inputs, true);
    EXPECT_EQ(fused.fused_kernels, 1u);
    EXPECT_TRUE(close(fused.values, json_values(c->outputs[0]), Tol{1e-4, 1e-5}));
  }
}

TEST(VulkanFusedAnchor, SumOfSquaresInEveryReductionMode) {
  KILN_REQUIRE_VULKAN();
  const Expression expr = [](std::vector<Tensor>& in) { return sum(mul(in[0], in[0]), {1}); };
  // Rows (vec4), rows split with their combine, rows that are not a multiple of 4.
  for (const Shape& s : {Shape{64, 1024}, Shape{2, 20000}, Shape{16, 301}}) {
    SCOPED_TRACE(s.str());
    expect_fused(expr, {vk_randn(s, 1)}, bytes(s));
  }
  // Columns (a thread per output), split into chunks.
  const Expression cols = [](std::vector<Tensor>& in) { return sum(mul(in[0], in[0]), {0}); };
  for (const Shape& s : {Shape{300, 70}, Shape{3000, 5}}) {
    SCOPED_TRACE(s.str());
    expect_fused(cols, {vk_randn(s, 2)}, bytes(s));
  }
}

TEST(VulkanFusedAnchor, MeanOverAMiddleDimOfABroadcastExpression) {
  KILN_REQUIRE_VULKAN();
  const Expression expr = [](std::vector<Tensor>& in) { return mean(sub(mul(in[0], in[1]), 0.5), {1}); };
  expect_fused(expr, {vk_randn(Shape{8, 1, 48}, 3), vk_randn(Shape{100, 48}, 4)}, bytes(Shape{8, 100, 48}));
}

// Rows whose prologue computes four elements a thread from vector loads: an input along the
// rows, one broadcast across them ([32, 1]), one along them but broadcast down ([256]), a 0-d
// one; against the unfused ops, in the rows kernel (sum) and the softmax that holds its rows.
TEST(VulkanFusedAnchor, VectorPrologueWithBroadcastInputs) {
  KILN_REQUIRE_VULKAN();
  const std::vector<Tensor> in = {vk_randn(Shape{32, 256}, 7), vk_randn(Shape{32, 1}, 8), vk_randn(Shape{256}, 9),
                                  vk_randn(Shape{}, 10)};
  const auto prologue = [](std::vector<Tensor>& t) { return add(mul(add(mul(t[0], t[1]), t[2]), t[3]), 0.5); };
  expect_fused([&](std::vector<Tensor>& t) { return sum(prologue(t), {1}); }, in, bytes(Shape{32, 256}));
  expect_fused([&](std::vector<Tensor>& t) { return softmax(prologue(t), 1); }, in, 0);
}

TEST(VulkanFusedAnchor, MaxOfExpMinusOne) {
  KILN_REQUIRE_VULKAN();
  const Expression expr = [](std::vector<Tensor>& in) { return max(sub(exp(in[0]), 1.0), {1}); };
  expect_fused(expr, {vk_randn(Shape{16, 300}, 5)}, bytes(Shape{16, 300}));
}

TEST(VulkanFusedAnchor, RmsEpilogueOnAReduction) {
  KILN_REQUIRE_VULKAN();
  const Expression expr = [](std::vector<Tensor>& in) { return sqrt(add(mean(mul(in[0], in[0]), {1}), kEps)); };
  expect_fused(expr, {vk_randn(Shape{32, 512}, 6)}, bytes(Shape{32, 512}));
  // Over a dim with a split column (the epilogue runs in the combine kernel).
  const Expression cols = [](std::vector<Tensor>& in) { return sqrt(add(mean(mul(in[0], in[0]), {0}), kEps)); };
  expect_fused(cols, {vk_randn(Shape{4000, 3}, 7)}, bytes(Shape{4000, 3}));
}

TEST(VulkanFusedAnchor, PrologueOverGatheredDimsFallsBackToSteps) {
  KILN_REQUIRE_VULKAN();
  const Expression expr = [](std::vector<Tensor>& in) { return sqrt(add(sum(mul(in[0], in[0]), {0, 2}), 1.0)); };
  expect_fused(expr, {vk_randn(Shape{6, 7, 5}, 8)}, 0);
}

// The statistics and softmax take their prologue (and epilogue) into their own kernels too.
TEST(VulkanFusedAnchor, StatisticsAndSoftmaxTakeTheGroupIn) {
  KILN_REQUIRE_VULKAN();
  const Expression var_of = [](std::vector<Tensor>& in) { return var(add(in[0], in[1]), {1}); };
  const Expression lse_of = [](std::vector<Tensor>& in) { return logsumexp(mul(in[0], 0.5), {1}); };
  const Expression std_cols = [](std::vector<Tensor>& in) { return std(mul(in[0], 2.0), {0}, 0.0); };
  // Rows (vec4), a row split with its combine and separate rewrite pass, columns.
  for (const Shape& s : {Shape{64, 1024}, Shape{2, 20000}, Shape{300, 70}}) {
    SCOPED_TRACE(s.str());
    const std::vector<Tensor> in = {vk_randn(s, 21), vk_randn(s, 22)};
    expect_fused(var_of, in, bytes(s));
    expect_fused(lse_of, in, bytes(s));
    expect_fused(std_cols, in, bytes(s));
    for (std::int64_t dim : {1, 0}) {
      SCOPED_TRACE(dim);
      const Expression soft = [dim](std::vector<Tensor>& x) { return softmax(add(mul(x[0], 0.5), x[1]), dim); };
      const Expression log_soft = [dim](std::vector<Tensor>& x) { return log_softmax(sub(x[0], x[1]), dim); };
      // A prologue and an epilogue: in steps, the prologue's values and the softmax would each
      // take a buffer of the output's size.
      const Expression dropout = [dim](std::vector<Tensor>& x) { return mul(softmax(mul(x[0], 0.5), dim), x[1]); };
      expect_fused(soft, in, 2 * bytes(s));
      expect_fused(log_soft, in, 2 * bytes(s));
      expect_fused(dropout, in, 2 * bytes(s));
    }
  }
}

TEST(VulkanFusedAnchor, MatmulBiasRelu) {
  KILN_REQUIRE_VULKAN();
  const Expression expr = [](std::vector<Tensor>& in) { return relu(add(matmul(in[0], in[1]), in[2])); };
  // The output is the only buffer it needs; in steps the product would be a second one.
  expect_fused(expr, {vk_randn(Shape{64, 40}, 9), vk_randn(Shape{40, 64}, 10), vk_randn(Shape{64}, 11)},
               2 * bytes(Shape{64, 64}));
  // Unaligned columns (scalar stores), batched products with a right operand per batch.
  expect_fused(expr, {vk_randn(Shape{37, 21}, 12), vk_randn(Shape{21, 23}, 13), vk_randn(Shape{23}, 14)}, 0);
  expect_fused(expr, {vk_randn(Shape{3, 20, 16}, 15), vk_randn(Shape{3, 16, 24}, 16), vk_randn(Shape{24}, 17)}, 0);
}

TEST(VulkanFusedAnchor, MatmulResidualAddInPlace) {
  KILN_REQUIRE_VULKAN();
  const Expression expr = [](std::vector<Tensor>& in) { return add(matmul(in[0], in[1]), std::move(in[2])); };
  const Shape out{64, 64};
  const Outcome fused =
      expect_fused(expr, {vk_randn(Shape{64, 32}, 18), vk_randn(Shape{32, 64}, 19), vk_randn(out, 20)}, bytes(out));
  EXPECT_EQ(fused.inplace_reuses, 1u);
}

TEST(VulkanFusedAnchor, KeptReductionIsWrittenBesideItsEpilogue) {
  KILN_REQUIRE_VULKAN();
  Tensor x = vk_randn(Shape{8, 300}, 21);
  vk0().sync().get();
  const bool was = fusion_enabled();
  std::vector<double> fused_s, fused_r, plain_s, plain_r;
  for (bool fusion : {true, false}) {
    set_fusion(fusion);
    Tensor s = sum(mul(x, x), {1});
    Tensor r = sqrt(s);  // s is held: written, and r computed from it in the same kernel
    const std::vector<float> vs = s.to_vector<float>().get(), vr = r.to_vector<float>().get();
    (fusion ? fused_s : plain_s).assign(vs.begin(), vs.end());
    (fusion ? fused_r : plain_r).assign(vr.begin(), vr.end());
  }
  set_fusion(was);
  EXPECT_TRUE(close(fused_s, plain_s, kFused));
  EXPECT_TRUE(close(fused_r, plain_r, kFused));
}


// Which ops share a kernel depends on what is pending when the stream drains, so on timing: a
// value must not depend on it. Fused nodes are `precise` (no multiply-add contracted across
// nodes, as NVIDIA's compiler otherwise does), so a fused chain, a product's epilogue and a
// reduction's prologue give the bits of the ops run one by one. (lavapipe contracts nothing,
// so this fails only on drivers that do: run it on a GPU.)
TEST(VulkanFusedAnchor, FusedValuesAreTheUnfusedBits) {
  KILN_REQUIRE_VULKAN();
  const Shape s{64, 48};
  const std::vector<Tensor> in = {vk_randn(s, 30), vk_randn(s, 31), vk_randn(s, 32), vk_randn(Shape{48, 48}, 33)};
  const std::vector<Expression> cases = {
      [](std::vector<Tensor>& x) { return add(mul(x[0], x[1]), x[2]); },
      [](std::vector<Tensor>& x) { return sub(mul(relu(add(mul(x[0], x[1]), x[2])), x[1]), mul(x[2], x[0])); },
      [](std::vector<Tensor>& x) { return add(mul(exp(mul(x[0], 0.5)), x[1]), mul(x[2], 3.0)); },
      [](std::vector<Tensor>& x) { return add(mul(matmul(x[0], x[3]), x[1]), x[2]); },
      [](std::vector<Tensor>& x) { return relu(add(mul(matmul(x[0], x[3]), 0.5), x[2])); },
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Outcome plain = run(cases[c], in, false);
    const Outcome fused = run(cases[c], in, true);
    EXPECT_GE(fused.fused_kernels, 1u) << "case " << c;
    ASSERT_EQ(fused.values.size(), plain.values.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < plain.values.size(); ++i) differ += fused.values[i] != plain.values[i];
    EXPECT_EQ(differ, 0u) << "case " << c << ": elements whose fused value is not the unfused one";
  }
}

}  // namespace
}  // namespace kiln::test
