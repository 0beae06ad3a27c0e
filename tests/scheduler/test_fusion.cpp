// Fusion: elementwise chains become one kernel, intermediates never reach memory, kernels are
// cached by structure, and results equal the unfused run bit for bit.
#include <gtest/gtest.h>

#include <limits>

#include "kiln/engine/kiln.h"
#include "support/gelu_chain.h"
#include "support/reference.h"
#include "support/fusion_scope.h"

namespace kiln {
namespace {

using test::FusionScope;

using test::gelu_chain;

// Two inputs of 3000 normal values; the first with zeros of both signs, infinities, NaN, a
// subnormal and a value near the largest float among them.
std::pair<Tensor, Tensor> inputs_with_specials(std::uint64_t seed) {
  Generator gen(seed);
  std::vector<float> values = randn(Shape{3000}, gen).to_vector<float>().get();
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-40f, 3e38f};
  for (std::size_t i = 0; i < std::size(specials); ++i) values[i * 13] = specials[i];
  return {from_vector(values, Shape{3000}), randn(Shape{3000}, gen)};
}

// A DAG with broadcasting, mixed dtypes, a comparison, where and two live outputs.
std::pair<Tensor, Tensor> mixed_graph(const Tensor& x, const Tensor& row, const Tensor& ints) {
  Tensor a = add(x, row);                       // [R, C] + [C]
  Tensor b = mul(a, ints);                      // f32 * i64[R, 1]
  Tensor mask = gt(b, 0.25);                    // bool
  Tensor c = where(mask, exp(neg(b)), sqrt(abs(a)));
  Tensor d = clamp(sub(c, 0.5), -0.2, 0.4);
  return {std::move(c), cast(std::move(d), DType::i64)};
}

TEST(Fusion, GeluChainIsOneKernel) {
  FusionScope fusion(true);
  Generator gen(1);
  Tensor x = randn(Shape{3, 1000}, gen);
  Device::cpu().sync().get();
  const EngineCounters before = counters();
  Tensor y = gelu_chain(x);
  (void)y.to_vector<float>().get();
  const EngineCounters after = counters();
  EXPECT_EQ(after.kernels_launched - before.kernels_launched, 1u);
  EXPECT_EQ(after.ops_fused - before.ops_fused, 5u);
  EXPECT_EQ(after.fused_kernels - before.fused_kernels, 1u);
}

TEST(Fusion, FusedEqualsUnfusedBitForBit) {
  Generator gen(2);
  // 2,500 columns: several tiles per row plus a tail; 7 rows for the broadcast operands.
  Tensor x = randn(Shape{7, 2500}, gen);
  Tensor row = randn(Shape{2500}, gen);
  Tensor ints = cast(mul(rand(Shape{7, 1}, gen), 5.0), DType::i64);
  std::vector<float> fused_c, plain_c, fused_g, plain_g;
  std::vector<std::int64_t> fused_d, plain_d;
  {
    FusionScope f(true);
    auto [c, d] = mixed_graph(x, row, ints);
    fused_c = c.to_vector<float>().get();
    fused_d = d.to_vector<std::int64_t>().get();
    fused_g = gelu_chain(x).to_vector<float>().get();
  }
  {
    FusionScope f(false);
    auto [c, d] = mixed_graph(x, row, ints);
    plain_c = c.to_vector<float>().get();
    plain_d = d.to_vector<std::int64_t>().get();
    plain_g = gelu_chain(x).to_vector<float>().get();
  }
  EXPECT_EQ(test::float_bits(fused_c), test::float_bits(plain_c));
  EXPECT_EQ(fused_d, plain_d);
  EXPECT_EQ(test::float_bits(fused_g), test::float_bits(plain_g));
}

TEST(Fusion, IntermediatesNeverReachMemory) {
  FusionScope fusion(true);
  constexpr std::int64_t n = 4 * 1024 * 1024;  // 16 MiB of f32
  constexpr std::size_t bytes = n * 4;
  Tensor x = full(Shape{n}, 0.5);
  Device::cpu().sync().get();
  reset_peak_memory();
  const std::size_t base = memory_stats().bytes_in_use;
  Tensor y = gelu_chain(x);
  const float v = y.to_vector<float>().get()[0];
  // PyTorch's gelu(0.5), from the elementwise reference data (input 7 of "gelu_special").
  double want = NAN;
  for (const test::RefCase& c : test::load_cases("elementwise.json"))
    if (c.name == "gelu_special" && c.inputs[0].at("data")[7].get<double>() == 0.5)
      want = c.outputs[0].at("data")[7].get<double>();
  EXPECT_NEAR(v, want, 1e-5);
  // Only y is new: the four intermediates of the chain are never allocated.
  EXPECT_LT(memory_stats().peak_in_use - base, bytes + bytes / 4);
}

TEST(Fusion, HandedOverInputBecomesTheOutput) {
  FusionScope fusion(true);
  constexpr std::int64_t n = 16 * 1024 * 1024;
  constexpr std::size_t bytes = n * 4;
  Device::cpu().sync().get();
  release_cached_memory();
  reset_peak_memory();
  const std::size_t base = memory_stats().bytes_in_use;
  const std::uint64_t kernels = counters().kernels_launched;
  Tensor x = zeros(Shape{n});
  for (int i = 0; i < 10; ++i) x = add(std::move(x), 1.0);
  EXPECT_EQ(x.to_vector<float>().get()[n - 1], 10.0f);
  EXPECT_LT(memory_stats().peak_in_use - base, bytes + bytes / 2);
  // zeros, then one fused kernel for the ten adds.
  EXPECT_EQ(counters().kernels_launched - kernels, 2u);
}

TEST(Fusion, KernelsAreCachedByStructureNotValuesOrSizes) {
  FusionScope fusion(true);
  Generator gen(3);
  auto step = [&](std::int64_t n, double s) {
    Tensor x = rand(Shape{n}, gen);
    return sum(mul(add(exp(x), s), s)).item<float>().get();
  };
  (void)step(100, 1.0);
  const EngineCounters before = counters();
  (void)step(300, 2.0);
  (void)step(5000, -3.0);
  const EngineCounters after = counters();
  EXPECT_EQ(after.plan_cache_misses, before.plan_cache_misses);
  EXPECT_EQ(after.plan_cache_hits - before.plan_cache_hits, 2u);
}

// A value dropped unread, and everything only it needed, is not computed: the kernel is the
// one the live values alone make (a plan-cache hit, not a new structure), and the live values
// are right. So is a whole group of dropped values: no kernel at all.
TEST(Fusion, DroppedValuesAreNotComputed) {
  FusionScope fusion(true);
  Generator gen(13);
  const Tensor x = rand(Shape{2000}, gen);
  auto live = [&] { return mul(add(exp(x), 1.0), 0.5); };
  const std::vector<float> want = live().to_vector<float>().get();
  const EngineCounters before = counters();
  std::vector<float> got;
  {
    Tensor y = exp(x);
    Tensor dead = sin(add(x, 2.0));  // read nowhere, dropped before the read below
    dead = Tensor();
    y = mul(add(std::move(y), 1.0), 0.5);
    got = y.to_vector<float>().get();
  }
  const EngineCounters mid = counters();
  EXPECT_EQ(test::float_bits(got), test::float_bits(want));
  EXPECT_EQ(mid.plan_cache_misses, before.plan_cache_misses);
  EXPECT_EQ(mid.kernels_launched - before.kernels_launched, 1u);
  for (int i = 0; i < 3; ++i) Tensor unread = erf(mul(x, 3.0));
  Device::cpu().sync().get();
  const EngineCounters after = counters();
  EXPECT_EQ(after.kernels_launched, mid.kernels_launched);
}

TEST(Fusion, UnrelatedOpsDoNotCutAGroupButUsersDo) {
  FusionScope fusion(true);
  Generator gen(4);
  Tensor x = rand(Shape{64, 64}, gen);
  Tensor w = rand(Shape{64, 64}, gen);
  Device::cpu().sync().get();
  const EngineCounters before = counters();
  Tensor a = exp(x);
  Tensor m = matmul(w, w);  // touches nothing of the group: runs ahead of it
  Tensor b = add(std::move(a), 1.0);
  Tensor c = mul(std::move(b), x);
  Tensor d = matmul(c, w);  // uses the group's value: the group runs first
  Tensor e = add(std::move(d), 2.0);
  (void)e.to_vector<float>().get();
  (void)m.to_vector<float>().get();
  const EngineCounters after = counters();
  // exp+add+mul fused; the first matmul alone; the second with its add as epilogue.
  EXPECT_EQ(after.kernels_launched - before.kernels_launched, 3u);
  EXPECT_EQ(after.ops_fused - before.ops_fused, 5u);
}

TEST(Fusion, AFailedInputFailsOnlyItsDependents) {
  FusionScope fusion(true);
  Tensor good = full(Shape{4}, 2.0);
  Device::cpu().sync().get();
  release_cached_memory();
  set_memory_limit(Device::cpu(), memory_stats().bytes_reserved);  // nothing new fits
  Tensor bad = ones(Shape{4});
  Device::cpu().sync().get();
  set_memory_limit(Device::cpu(), 0);
  // One group reading both: the values that do not depend on `bad` must still arrive.
  Tensor a = add(good, 1.0);
  Tensor c = add(bad, 1.0);
  Tensor b = mul(a, 3.0);
  Tensor d = mul(c, a);
  EXPECT_EQ(b.to_vector<float>().get(), (std::vector<float>{9, 9, 9, 9}));
  for (const Tensor* t : {&c, &d}) {
    try {
      (void)t->to_vector<float>().get();
      FAIL() << "expected the read to fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.op(), "full");  // the op that failed first
    }
  }
}

// A chain that ends by scaling (x * s, s * x, or x / s) has its last multiply done as the output
// is written; x / s takes that path only where 1 / s is exact. Every ending, below and above the
// size that is written with non-temporal stores (8 MiB), with and without its unscaled value as
// a second output, gives the unfused bits.
TEST(Fusion, TrailingScaleEqualsUnfusedBitForBit) {
  using Ending = Tensor (*)(Tensor);
  const Ending endings[] = {
      [](Tensor t) { return mul(std::move(t), 0.3); },  [](Tensor t) { return mul(1.7, std::move(t)); },
      [](Tensor t) { return div(std::move(t), 4.0); },  [](Tensor t) { return div(std::move(t), 3.0); },
      [](Tensor t) { return div(std::move(t), 0x1p-140); },  // 1 / s overflows: divides
  };
  Generator gen(9);
  for (const std::int64_t n : {std::int64_t{5000}, std::int64_t{2'300'000}}) {
    const Tensor x = randn(Shape{n}, gen);
    for (std::size_t e = 0; e < std::size(endings); ++e) {
      for (const bool keep_unscaled : {false, true}) {
        std::vector<float> got[2], unscaled[2];
        for (const bool on : {true, false}) {
          FusionScope f(on);
          Tensor t = add(exp(mul(x, -0.5)), 0.25);
          Tensor y = endings[e](keep_unscaled ? t : std::move(t));
          got[on] = y.to_vector<float>().get();
          if (keep_unscaled) unscaled[on] = t.to_vector<float>().get();
        }
        SCOPED_TRACE("n " + std::to_string(n) + ", ending " + std::to_string(e) + (keep_unscaled ? ", kept" : ""));
        EXPECT_EQ(test::float_bits(got[1]), test::float_bits(got[0]));
        EXPECT_EQ(test::float_bits(unscaled[1]), test::float_bits(unscaled[0]));
      }
    }
  }
}

// A node that only combines a value with a scalar is done in registers by the node that makes
// the value. Every such op, on both sides, after producers whose formula ends in a multiply
// (square, mul: an add after them must not become one FMA), a SLEEF call (exp) and a select
// (relu), with zeros, infinities and NaN among the inputs, gives the unfused bits; so do values
// that are read twice or are outputs themselves (not folded).
TEST(Fusion, ScalarOpsFoldedIntoTheirProducerEqualUnfusedBitForBit) {
  using Producer = Tensor (*)(const Tensor&, const Tensor&);
  using Consumer = Tensor (*)(Tensor);
  const Producer producers[] = {
      [](const Tensor& a, const Tensor&) { return square(a); },
      [](const Tensor& a, const Tensor& b) { return mul(a, b); },
      [](const Tensor& a, const Tensor&) { return exp(a); },
      [](const Tensor& a, const Tensor&) { return relu(a); },
  };
  const Consumer consumers[] = {
      [](Tensor t) { return add(std::move(t), 0.1); },  [](Tensor t) { return add(0.1, std::move(t)); },
      [](Tensor t) { return sub(std::move(t), 0.3); },  [](Tensor t) { return sub(0.3, std::move(t)); },
      [](Tensor t) { return mul(std::move(t), 1.3); },  [](Tensor t) { return mul(1.3, std::move(t)); },
      [](Tensor t) { return div(std::move(t), 3.0); },  [](Tensor t) { return div(3.0, std::move(t)); },
  };
  const auto [a, b] = inputs_with_specials(11);
  for (std::size_t p = 0; p < std::size(producers); ++p) {
    for (std::size_t c = 0; c < std::size(consumers); ++c) {
      for (const int keep : {0, 1}) {  // 1: the producer's value is read again, so it stays
        std::vector<float> got[2];
        for (const bool on : {true, false}) {
          FusionScope f(on);
          Tensor t = producers[p](a, b);
          Tensor y = add(consumers[c](keep ? t : std::move(t)), 2.0);  // y: not the folded node itself
          if (keep) y = add(std::move(y), t);
          got[on] = y.to_vector<float>().get();
        }
        SCOPED_TRACE("producer " + std::to_string(p) + ", consumer " + std::to_string(c) + ", keep " +
                     std::to_string(keep));
        EXPECT_EQ(test::float_bits(got[1]), test::float_bits(got[0]));
      }
    }
  }
}

// The other way round: a unary node applies the scalar op that makes its operand, reading the
// operand's own source (an input, or a node whose value must then live until this step: a
// node computed in between must not take its slot). With zeros, infinities and NaN.
TEST(Fusion, ScalarOpsFoldedIntoTheirUnaryReaderEqualUnfusedBitForBit) {
  using Chain = Tensor (*)(const Tensor&, const Tensor&);
  const Chain chains[] = {
      [](const Tensor& a, const Tensor&) { return add(exp(mul(a, 0.7)), 1.0); },
      [](const Tensor& a, const Tensor&) { return add(erf(div(a, 1.4142135)), 1.0); },  // pre and post
      [](const Tensor& a, const Tensor&) { return add(sigmoid(sub(0.5, a)), 1.0); },
      [](const Tensor& a, const Tensor&) { return add(square(add(a, 0.25)), 1.0); },
      [](const Tensor& a, const Tensor&) { return add(tanh(div(3.0, a)), 1.0); },
      [](const Tensor& a, const Tensor& b) {  // the scaled value is a node; sin(b) is made in between
        Tensor scaled = mul(clamp(a, -1.0, 1.0), 2.0);
        Tensor other = sin(b);
        return add(exp(std::move(scaled)), std::move(other));
      },
  };
  const auto [a, b] = inputs_with_specials(12);
  for (std::size_t c = 0; c < std::size(chains); ++c) {
    std::vector<float> got[2];
    for (const bool on : {true, false}) {
      FusionScope f(on);
      got[on] = chains[c](a, b).to_vector<float>().get();
    }
    SCOPED_TRACE("chain " + std::to_string(c));
    EXPECT_EQ(test::float_bits(got[1]), test::float_bits(got[0]));
  }
}

TEST(Fusion, SettingsAreValidated) {
  EXPECT_THROW(set_flush_threshold(0), Error);
}

}  // namespace
}  // namespace kiln
