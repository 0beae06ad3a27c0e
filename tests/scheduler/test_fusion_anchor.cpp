// Fusion around a reduction or matmul (its anchor): an elementwise prologue computed as the
// reduction reads it, an elementwise epilogue applied before the result is stored. Values come
// from PyTorch (tests/data/gen_fusion.py) and must equal the unfused run bit for bit.
#include <gtest/gtest.h>

#include <functional>

#include "kiln/engine/kiln.h"
#include "support/fusion_cases.h"
#include "support/gelu_chain.h"
#include "support/reference.h"

namespace kiln {
namespace {

using test::RefCase;

// What one expression did: its values and how it ran.
struct Outcome {
  std::vector<float> values;
  std::uint64_t kernels = 0;    // kernels launched
  std::uint64_t ops_fused = 0;  // ops that ran inside fused kernels
};

using Expression = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs `expr` on fresh copies of `inputs` (so ownership hand-overs inside stay the expression's
// own) with fusion on or off.
Outcome run(const Expression& expr, const std::vector<Tensor>& inputs, bool fusion) {
  Device::cpu().sync().get();
  const bool was = fusion_enabled();
  set_fusion(fusion);
  std::vector<Tensor> copies;
  for (const Tensor& t : inputs) copies.push_back(add(t, 0.0));
  Device::cpu().sync().get();
  const EngineCounters before = counters();
  Outcome o;
  o.values = expr(copies).to_vector<float>().get();
  const EngineCounters after = counters();
  set_fusion(was);
  o.kernels = after.kernels_launched - before.kernels_launched;
  o.ops_fused = after.ops_fused - before.ops_fused;
  return o;
}

// Checks `expr` against fused and unfused runs: one kernel of `ops` ops when fused, the same
// bits unfused.
void expect_fused(const Expression& expr, const std::vector<Tensor>& inputs, std::uint64_t ops,
                  const std::vector<double>* want = nullptr, test::Tolerance tol = {}) {
  const Outcome fused = run(expr, inputs, true);
  const Outcome plain = run(expr, inputs, false);
  EXPECT_EQ(fused.kernels, 1u);
  EXPECT_EQ(fused.ops_fused, ops);
  EXPECT_EQ(plain.ops_fused, 0u);
  EXPECT_EQ(test::float_bits(fused.values), test::float_bits(plain.values)) << "fused and unfused results differ";
  if (want) {
    EXPECT_TRUE(test::values_close(std::vector<double>(fused.values.begin(), fused.values.end()), *want, tol));
  }
}

using test::gelu_chain;

constexpr double kEps = 1e-5;

TEST(FusionAnchor, MatchesPyTorchAndTheUnfusedRun) {
  const std::vector<RefCase> cases = test::load_cases("fusion.json");
  ASSERT_EQ(cases.size(), test::fusion_cases().size());
  for (const test::FusionCase& n : test::fusion_cases()) {
    SCOPED_TRACE(n.name);
    const RefCase* c = test::find_case(cases, n.name);
    ASSERT_NE(c, nullptr);
    std::vector<Tensor> inputs;
    for (const test::Json& j : c->inputs) inputs.push_back(test::make_tensor(j));
    const std::vector<double> want = test::json_values(c->outputs[0]);
    expect_fused(n.expr, inputs, n.ops, &want, {1e-5, 1e-5});
  }
}

// Shapes that take every path of the CPU kernels: rows split into blocks, short rows, columns,
// reduced dims that need a gather, reduced dims around one kept run (reduce_split: rows of
// partials, short or split into blocks); a tall product (OpenBLAS gives other last bits when its rows
// are cut into several calls), batched products, a right operand per batch, gemv shapes.
TEST(FusionAnchor, EveryKernelPathEqualsTheUnfusedRun) {
  Generator gen(11);
  auto prologue = [](std::vector<std::int64_t> dims) {
    return [dims](const std::vector<Tensor>& in) { return sum(mul(sub(in[0], 0.25), in[0]), dims); };
  };
  struct ReduceCase {
    Shape shape;
    std::vector<std::int64_t> dims;
  };
  for (const ReduceCase& c : {ReduceCase{Shape{3, 40000}, {1}}, ReduceCase{Shape{70000}, {}}, ReduceCase{Shape{9, 13}, {1}},
                              ReduceCase{Shape{300, 70}, {0}}, ReduceCase{Shape{1500, 3}, {0}},
                              ReduceCase{Shape{6, 7, 5}, {0, 2}}, ReduceCase{Shape{4, 6, 9, 40}, {0, 2, 3}},
                              ReduceCase{Shape{2, 3, 20000}, {0, 2}}, ReduceCase{Shape{4, 3, 5, 6}, {1, 3}}}) {
    SCOPED_TRACE(c.shape.str());
    expect_fused(prologue(c.dims), {randn(c.shape, gen)}, 3);
  }
  auto linear = [](const std::vector<Tensor>& in) { return gelu_chain(add(matmul(in[0], in[1]), in[2])); };
  struct MatmulCase {
    Shape a, b;
  };
  for (const MatmulCase& c : {MatmulCase{Shape{600, 64}, Shape{64, 256}}, MatmulCase{Shape{3, 100, 64}, Shape{64, 256}},
                              MatmulCase{Shape{3, 50, 16}, Shape{3, 16, 40}}, MatmulCase{Shape{1, 32}, Shape{32, 300}},
                              MatmulCase{Shape{40, 32}, Shape{32, 1}}}) {
    SCOPED_TRACE(c.a.str() + " @ " + c.b.str());
    const std::int64_t n = c.b[c.b.rank() - 1];
    expect_fused(linear, {randn(c.a, gen), randn(c.b, gen), randn(Shape{n}, gen)}, 7);
  }
}

// The two-pass statistics and softmax pull their input from the prologue on each pass; every
// path of their kernels (rows split into blocks, columns, a gather, rows long enough for
// streaming stores, column tiles wider than one tile) equals the unfused run bit for bit.
TEST(FusionAnchor, StatisticsAndSoftmaxTakeAPrologueOnEveryPath) {
  Generator gen(16);
  struct StatCase {
    Shape shape;
    std::vector<std::int64_t> dims;
  };
  for (const StatCase& c : {StatCase{Shape{3, 40000}, {1}}, StatCase{Shape{9, 13}, {1}}, StatCase{Shape{300, 70}, {0}},
                            StatCase{Shape{6, 7, 5}, {0, 2}}}) {
    SCOPED_TRACE(c.shape.str());
    const std::vector<Tensor> in = {randn(c.shape, gen)};
    const std::vector<std::int64_t> dims = c.dims;
    expect_fused([dims](const std::vector<Tensor>& x) { return var(add(x[0], 0.5), dims); }, in, 2);
    expect_fused([dims](const std::vector<Tensor>& x) { return std(mul(x[0], 3.0), dims, 0.0); }, in, 2);
    expect_fused([dims](const std::vector<Tensor>& x) { return logsumexp(mul(x[0], 2.0), dims); }, in, 2);
  }
  struct AlongCase {
    Shape shape;
    std::int64_t dim;
  };
  for (const AlongCase& c : {AlongCase{Shape{9, 13}, 1}, AlongCase{Shape{520, 4100}, 1}, AlongCase{Shape{300, 70}, 0},
                             AlongCase{Shape{3, 20, 1500}, 1}}) {
    SCOPED_TRACE(c.shape.str());
    const std::vector<Tensor> in = {randn(c.shape, gen), randn(c.shape, gen)};
    const std::int64_t dim = c.dim;
    expect_fused([dim](const std::vector<Tensor>& x) { return softmax(add(mul(x[0], 0.5), x[1]), dim); }, in, 3);
    expect_fused([dim](const std::vector<Tensor>& x) { return log_softmax(add(mul(x[0], 0.5), x[1]), dim); }, in, 3);
  }
}

// A value someone still holds is written (and the prologue is then not fused: the reduction
// reads it from memory); a kept reduction result is written beside its epilogue's.
TEST(FusionAnchor, HeldValuesAreStillWritten) {
  Generator gen(12);
  Tensor x = randn(Shape{8, 300}, gen);
  Device::cpu().sync().get();
  Tensor sq = mul(x, x);  // held
  Tensor s = sum(sq, {1});
  Tensor r = sqrt(s);  // s is held too: written, and r computed from it in the same kernel
  const std::vector<float> got_sq = sq.to_vector<float>().get();
  const std::vector<float> got_s = s.to_vector<float>().get();
  const std::vector<float> got_r = r.to_vector<float>().get();
  set_fusion(false);
  Tensor sq2 = mul(x, x);
  Tensor s2 = sum(sq2, {1});
  Tensor r2 = sqrt(s2);
  EXPECT_EQ(test::float_bits(got_sq), test::float_bits(sq2.to_vector<float>().get()));
  EXPECT_EQ(test::float_bits(got_s), test::float_bits(s2.to_vector<float>().get()));
  EXPECT_EQ(test::float_bits(got_r), test::float_bits(r2.to_vector<float>().get()));
  set_fusion(true);
}

// A residual handed over with its last reference takes the fused matmul's output in place.
TEST(FusionAnchor, EpilogueWritesIntoAHandedOverInput) {
  Generator gen(13);
  Tensor a = randn(Shape{256, 64}, gen), b = randn(Shape{64, 128}, gen);
  Tensor residual = randn(Shape{256, 128}, gen);
  const std::vector<float> expected = add(matmul(a, b), residual).to_vector<float>().get();
  Device::cpu().sync().get();
  const EngineCounters before = counters();
  Tensor y = add(matmul(a, b), std::move(residual));
  const std::vector<float> got = y.to_vector<float>().get();
  const EngineCounters after = counters();
  EXPECT_EQ(after.fused_kernels - before.fused_kernels, 1u);
  EXPECT_EQ(after.inplace_reuses - before.inplace_reuses, 1u);
  EXPECT_EQ(test::float_bits(got), test::float_bits(expected));
}

// An op between the reduction and its epilogue that needs a value of the prologue cuts the
// group in two: the prologue's values are written, and everything still agrees.
TEST(FusionAnchor, AUseOfAPrologueValueAfterTheAnchorSplitsTheGroup) {
  Generator gen(14);
  Tensor x = randn(Shape{16, 33}, gen);
  auto softmax_by_hand = [](const std::vector<Tensor>& in) {
    Tensor e = exp(sub(in[0], max(in[0], {1}, true)));
    Tensor s = sum(e, {1}, true);
    return div(std::move(e), std::move(s));
  };
  const Outcome fused = run(softmax_by_hand, {x}, true);
  const Outcome plain = run(softmax_by_hand, {x}, false);
  EXPECT_EQ(test::float_bits(fused.values), test::float_bits(plain.values));
  const std::vector<float> want = softmax(x, 1).to_vector<float>().get();
  EXPECT_TRUE(test::values_close(std::vector<double>(fused.values.begin(), fused.values.end()),
                                 std::vector<double>(want.begin(), want.end()), {1e-5, 1e-7}));
}

// A repeated step plans and compiles once: the anchored kernel is cached by structure.
TEST(FusionAnchor, ARepeatedStepCompilesOnce) {
  Generator gen(15);
  auto step = [&](std::int64_t rows) {
    Tensor x = randn(Shape{rows, 64}, gen);
    return sqrt(add(mean(mul(x, x), {1}), kEps)).to_vector<float>().get();
  };
  (void)step(4);
  const EngineCounters before = counters();
  (void)step(9);
  (void)step(33);
  const EngineCounters after = counters();
  EXPECT_EQ(after.plan_cache_misses, before.plan_cache_misses);
  EXPECT_GE(after.plan_cache_hits - before.plan_cache_hits, 2u);
}

}  // namespace
}  // namespace kiln
