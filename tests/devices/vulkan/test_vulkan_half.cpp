// f16 and bf16 tensors on Vulkan against PyTorch (tests/data/gen_half.py): every elementwise op
// (computed in f32, rounded once to the op's dtype, as PyTorch's CUDA kernels do), promotion
// next to the other dtypes, casts, layout ops, creation, reductions (accumulated in f32), the
// index ops that move values, and an f16 product with a bias and an activation after it. Fused
// and unfused runs agree bit for bit; a chain of half-type ops fuses into one kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "devices/vulkan/vulkan_test_support.h"
#include "support/elementwise_cases.h"
#include "support/fusion_scope.h"
#include "support/index_cases.h"
#include "support/reduce_cases.h"

namespace kiln {
namespace {

using test::Json;
using test::RefCase;
using test::Tolerance;

constexpr const char* kHalfFile = "half.json";

// Ops whose f32 result is exact or correctly rounded in Vulkan (IEEE add, sub, mul; moves,
// comparisons, rounding to integers, casts): after the one rounding to 16 bits they equal
// PyTorch's bit for bit. The others (division at 2.5 ulp of f32 in Vulkan, kiln's own
// transcendental math against PyTorch's) may land on the other side of a 16-bit rounding
// boundary: one unit in the last place of the result's dtype.
bool exact(const std::string& op) {
  static const std::set<std::string> ops = {
      "add", "sub", "mul", "neg", "abs", "square", "relu", "floor", "ceil", "round", "sign", "maximum",
      "minimum", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "logical_not", "logical_and",
      "logical_or", "logical_xor", "where", "clamp", "cast", "full", "arange"};
  return ops.count(op) > 0;
}

// One unit in the last place relative to the value (2^-10 for f16's 10 mantissa bits, 2^-7 for
// bf16's 7), and the smallest subnormal of f16 for results near zero; f32 results (promotion)
// take the op suite's tolerance.
Tolerance ulp_of(DType t, double units = 1) {
  if (t == DType::f16) return {units * std::ldexp(1.0, -10), units * std::ldexp(1.0, -24)};
  if (t == DType::bf16) return {units * std::ldexp(1.0, -7), 1e-38};
  return {1e-5, 1e-6};
}

DType out_dtype(const RefCase& c) { return test::parse_dtype(c.outputs[0].at("dtype").get<std::string>()); }

::testing::AssertionResult matches_case(const Tensor& y, const RefCase& c) {
  return test::matches(y, c.outputs[0], exact(c.op) ? Tolerance{0, 0} : ulp_of(out_dtype(c)));
}

TEST(VulkanHalf, EveryElementwiseOpMatchesPyTorch) {
  KILN_REQUIRE_VULKAN();
  std::size_t ran = 0;
  for (const RefCase& c : test::load_cases(kHalfFile)) {
    if (!test::is_elementwise_case(c)) continue;
    SCOPED_TRACE(c.name);
    const Tensor fused = test::run_elementwise_case(c, test::vk0());
    EXPECT_TRUE(matches_case(fused, c));
    // The same op with fusion off: the same bits (f32 math, one rounding, either way).
    std::vector<double> unfused_bits;
    {
      test::FusionScope off(false, test::vk0());
      unfused_bits = test::host_values(test::run_elementwise_case(c, test::vk0()));
    }
    EXPECT_TRUE(test::same_bits(test::host_values(fused), unfused_bits));
    ++ran;
  }
  EXPECT_GE(ran, 250u);
}

// Every elementwise op has cases in both 16-bit dtypes.
TEST(VulkanHalf, CoversEveryOpInBothDtypes) {
  std::map<std::string, std::set<std::string>> seen;
  for (const RefCase& c : test::load_cases(kHalfFile))
    for (const Json& t : c.inputs) seen[c.op].insert(t.at("dtype").get<std::string>());
  std::vector<std::string> ops = {"cast", "where", "clamp"};
  for (const auto& [name, fn] : test::unary_ops()) ops.push_back(name);
  for (const auto& [name, fn] : test::binary_ops()) ops.push_back(name);
  for (const std::string& op : ops) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(seen[op].count("f16"));
    EXPECT_TRUE(seen[op].count("bf16"));
  }
}

// GELU written as five ops on 16-bit values: one fused kernel, rounding after each op as the ops
// would one by one (the reference rounds there), and the unfused run's bits.
TEST(VulkanHalf, OpChainFusesAndRoundsWhereItsOpsWould) {
  KILN_REQUIRE_VULKAN();
  const auto cases = test::load_cases(kHalfFile);
  for (const char* name : {"gelu_chain_f16", "gelu_chain_bf16", "gelu_chain_f16_long"}) {
    SCOPED_TRACE(name);
    const RefCase* c = test::find_case(cases, name);
    ASSERT_NE(c, nullptr);
    const Tensor x = test::make_tensor(c->inputs[0], test::vk0());
    auto chain = [&] { return mul(mul(x, add(erf(mul(x, 0.7071067811865476)), 1.0)), 0.5); };
    test::vk0().sync().get();
    const EngineCounters before = counters(test::vk0());
    const Tensor y = chain();
    const std::vector<double> fused = test::host_values(y);
    // One kernel: the chain and the cast to f32 that the read asks for, writing y and the copy.
    EXPECT_EQ(counters(test::vk0()).fused_kernels - before.fused_kernels, 1u);
    EXPECT_EQ(y.dtype(), x.dtype());
    EXPECT_TRUE(test::matches(y, c->outputs[0], ulp_of(y.dtype())));
    test::FusionScope off(false, test::vk0());
    EXPECT_TRUE(test::same_bits(fused, test::host_values(chain())));
  }
}

// Layout ops move 16-bit values unchanged; pad writes its value rounded to the dtype.
TEST(VulkanHalf, LayoutOpsMatchPyTorch) {
  KILN_REQUIRE_VULKAN();
  const auto cases = test::load_cases(kHalfFile);
  auto run = [&](const char* name, const std::function<Tensor(const std::vector<Tensor>&, const Json&)>& fn) {
    SCOPED_TRACE(name);
    const RefCase* c = test::find_case(cases, name);
    ASSERT_NE(c, nullptr);
    std::vector<Tensor> in;
    for (const Json& j : c->inputs) in.push_back(test::make_tensor(j, test::vk0()));
    EXPECT_TRUE(test::matches(fn(in, c->attrs), c->outputs[0], {0, 0}));
  };
  using Ints = std::vector<std::int64_t>;
  run("permute_f16", [](auto& in, auto& a) { return permute(in[0], a.at("dims").template get<Ints>()); });
  run("transpose_f16", [](auto& in, auto&) { return transpose(in[0], 0, 1); });
  run("cat_f16", [](auto& in, auto& a) { return cat({in[0], in[1]}, a.at("dim").template get<std::int64_t>()); });
  run("slice_f16", [](auto& in, auto&) { return slice(in[0], 1, 1, 4, 2); });
  run("flip_f16", [](auto& in, auto& a) { return flip(in[0], a.at("dims").template get<Ints>()); });
  run("pad_bf16", [](auto& in, auto& a) {
    return pad(in[0], a.at("pad").template get<Ints>(), a.at("value").template get<double>());
  });
  run("pad_f16", [](auto& in, auto& a) {
    return pad(in[0], a.at("pad").template get<Ints>(), a.at("value").template get<double>());
  });
  run("tril_bf16", [](auto& in, auto&) { return tril(in[0]); });
}

TEST(VulkanHalf, CreationRoundsItsValuesOnce) {
  KILN_REQUIRE_VULKAN();
  const auto cases = test::load_cases(kHalfFile);
  const RefCase* f16 = test::find_case(cases, "full_f16");
  const RefCase* bf16 = test::find_case(cases, "full_bf16");
  const RefCase* range = test::find_case(cases, "arange_f16");
  ASSERT_TRUE(f16 && bf16 && range);
  EXPECT_TRUE(test::matches(full({2, 3}, 0.1, {DType::f16, test::vk0()}), f16->outputs[0], {0, 0}));
  EXPECT_TRUE(test::matches(full({4}, 1e30, {DType::bf16, test::vk0()}), bf16->outputs[0], {0, 0}));
  EXPECT_TRUE(test::matches(arange(0, 5, 0.5, {DType::f16, test::vk0()}), range->outputs[0], {0, 0}));
}

// What a mixed-precision layer does: an f16 product (f32 accumulation, rounded once), a bias
// and relu on its result, the bias and relu fused into one kernel.
TEST(VulkanHalf, BiasAndActivationAfterHalfProduct) {
  KILN_REQUIRE_VULKAN();
  const auto cases = test::load_cases(kHalfFile);
  const RefCase* c = test::find_case(cases, "linear_relu_f16");
  ASSERT_NE(c, nullptr);
  std::vector<Tensor> in;
  for (const Json& j : c->inputs) in.push_back(test::make_tensor(j, test::vk0()));
  const Tensor y = relu(add(matmul(in[0], in[1]), in[2]));
  EXPECT_EQ(y.dtype(), DType::f16);
  // The product's sums run in another order than PyTorch's: one unit at the product, which the
  // bias add may carry into a second.
  EXPECT_TRUE(test::matches(y, c->outputs[0], ulp_of(DType::f16, 2)));
}

// The CPU has no 16-bit floats: asking for them there is an error at the call site that names
// the op, the dtype and the device.
TEST(VulkanHalf, CpuRejectsHalfTypesAtTheCallSite) {
  for (DType t : {DType::f16, DType::bf16}) {
    try {
      (void)full({2}, 1.0, {t, Device::cpu()});
      ADD_FAILURE() << "no error for " << dtype_name(t) << " on the CPU";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("full"), std::string::npos) << what;
      EXPECT_NE(what.find(dtype_name(t)), std::string::npos) << what;
      EXPECT_NE(what.find("cpu"), std::string::npos) << what;
    }
  }
}

// Reductions accumulate in f32 and round their result once to the input's dtype: within one
// unit in its last place of PyTorch's (the sums run in another order); indices and truth
// values exactly. Every reduction op is covered in both dtypes (cumsum also on rows long
// enough to be split into chunks).
TEST(VulkanHalf, ReductionsMatchPyTorch) {
  KILN_REQUIRE_VULKAN();
  std::map<std::string, std::set<std::string>> seen;
  for (const RefCase& c : test::load_cases(kHalfFile)) {
    if (!c.name.starts_with("reduce_")) continue;
    SCOPED_TRACE(c.name);
    const Tensor x = test::make_tensor(c.inputs[0], test::vk0());
    const Tensor y = test::run_reduce_case(c, x);
    EXPECT_TRUE(test::matches(y, c.outputs[0], ulp_of(out_dtype(c))));
    seen[c.op].insert(c.inputs[0].at("dtype").get<std::string>());
  }
  for (const char* op : {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "any", "all", "var", "std",
                         "logsumexp", "softmax", "log_softmax", "cumsum"})
    EXPECT_EQ(seen[op].size(), 2u) << op;
}

// A reduction takes the elementwise ops before it (its prologue, computed as it reads) and after
// it (its epilogue, applied as it writes) into its own kernel, on 16-bit values as on f32: one
// kernel, no intermediate in memory, each op's value rounded where the op would round it (so
// fused and unfused runs agree bit for bit) and PyTorch's values op by op within two units in
// the last place (a reduction's rounding may carry into the next op's).
TEST(VulkanHalf, ReductionsTakeTheOpsAroundThemIntoTheirKernel) {
  KILN_REQUIRE_VULKAN();
  using Ints = std::vector<std::int64_t>;
  const std::map<std::string, std::function<Tensor(const std::vector<Tensor>&, const Json&)>> exprs = {
      {"attention_softmax", [](auto& in, auto&) { return softmax(add(mul(in[0], 0.125), in[1]), -1); }},
      {"rms", [](auto& in, auto&) { return rsqrt(add(mean(mul(in[0], in[0]), {1}), 1e-5)); }},
      {"sum_squares",
       [](auto& in, auto& a) { return sum(mul(in[0], in[0]), a.at("dims").template get<Ints>()); }},
      {"softmax_times_three", [](auto& in, auto&) { return mul(softmax(in[0], 1), 3.0); }},
  };
  std::size_t ran = 0;
  for (const RefCase& c : test::load_cases(kHalfFile)) {
    if (!c.name.starts_with("fused_")) continue;
    SCOPED_TRACE(c.name);
    std::vector<Tensor> in;
    for (const Json& j : c.inputs) in.push_back(test::make_tensor(j, test::vk0()));
    const auto& expr = exprs.at(c.op);
    test::vk0().sync().get();
    const EngineCounters before = counters(test::vk0());
    const Tensor y = expr(in, c.attrs);
    test::vk0().sync().get();
    // Reduced dims that are not adjacent need a gather: that group runs in steps, not as one kernel.
    if (!c.name.ends_with("_gathered_f16")) {
      EXPECT_EQ(counters(test::vk0()).fused_kernels - before.fused_kernels, 1u);
    }
    EXPECT_EQ(y.dtype(), in[0].dtype());
    EXPECT_TRUE(test::matches(y, c.outputs[0], ulp_of(y.dtype(), 2)));
    const std::vector<double> fused = test::host_values(y);
    test::FusionScope off(false, test::vk0());
    EXPECT_TRUE(test::same_bits(fused, test::host_values(expr(in, c.attrs))));
    ++ran;
  }
  EXPECT_EQ(ran, 9u);
}

// The index ops that move values (gather, scatter, index_select, masked_fill, whose fill value
// is rounded to the dtype), the ones that order them (sort, topk: values and indices) and
// scatter_add (in index order, each sum rounded to the dtype, duplicates included) give
// PyTorch's results exactly.
TEST(VulkanHalf, IndexOpsMatchPyTorch) {
  KILN_REQUIRE_VULKAN();
  std::set<std::string> seen;
  for (const RefCase& c : test::load_cases(kHalfFile)) {
    if (!c.name.starts_with("index_")) continue;
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> outs = test::run_index_case(c, test::vk0());
    ASSERT_EQ(outs.size(), c.outputs.size());
    for (std::size_t i = 0; i < outs.size(); ++i)
      EXPECT_TRUE(test::matches(outs[i], c.outputs[i], {0, 0})) << "output " << i;
    seen.insert(c.op + "/" + c.inputs[0].at("dtype").get<std::string>());
  }
  EXPECT_EQ(seen.size(), 14u);  // seven ops, two dtypes
}

}  // namespace
}  // namespace kiln
