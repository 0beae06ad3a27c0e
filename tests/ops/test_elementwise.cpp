// Elementwise ops against PyTorch's values (tests/data/gen_elementwise.py): every op, every
// dtype it supports, broadcasting, scalar forms on both sides, 0-d and empty tensors, NaN/inf.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "support/elementwise_cases.h"

namespace kiln {
namespace {

using test::Json;
using test::RefCase;
using test::Tolerance;

constexpr const char* kElementwiseFile = "elementwise.json";

// One tolerance for every op: rtol 1e-5 (about 80 ulp of f32), atol 1e-6. Integer and bool
// results must match exactly. Exact IEEE arithmetic, comparisons, rounding and casts match
// PyTorch bit for bit; so do log log1p expm1 sin cos tan tanh sqrt, which PyTorch also computes
// with SLEEF u10 (or glibc, within the same ulp). exp and erf are kiln's own (at most 0.91 and
// 1.15 ulp, test_fast_math.cpp), and gelu silu sigmoid softplus pow atan2 differ from PyTorch by
// a few ulp (SLEEF u10 against glibc, and PyTorch's own operation order in its scalar tails);
// atol covers outputs near zero, e.g. gelu of large negative inputs; cases named *_small (tiny
// arguments whose results are as tiny: expm1, log1p, tanh, ...) are held to rtol alone.
Tolerance elementwise_tolerance(const RefCase& c) { return {1e-5, c.name.ends_with("_small") ? 0.0 : 1e-6}; }

std::vector<std::string> all_ops() {
  std::vector<std::string> ops;
  for (const auto& [name, fn] : test::unary_ops()) ops.push_back(name);
  for (const auto& [name, fn] : test::binary_ops()) ops.push_back(name);
  for (const char* name : {"cast", "where", "clamp"}) ops.push_back(name);
  return ops;
}

class ElementwiseReference : public ::testing::TestWithParam<Device> {};

TEST_P(ElementwiseReference, EveryOpMatchesPyTorch) {
  for (const std::string& op : all_ops()) {
    const std::vector<RefCase> cases = test::cases_for(kElementwiseFile, op);
    EXPECT_FALSE(cases.empty()) << "no reference cases for " << op;
    for (const RefCase& c : cases) {
      SCOPED_TRACE(c.name);
      Tensor y = test::run_elementwise_case(c, GetParam());
      EXPECT_TRUE(test::matches(y, c.outputs[0], elementwise_tolerance(c)));
    }
  }
}

// Every supported dtype of every op is exercised: the data holds a case per (op, input dtype).
TEST_P(ElementwiseReference, CoversEveryDtype) {
  std::map<std::string, std::set<std::string>> seen;
  for (const RefCase& c : test::load_cases(kElementwiseFile))
    for (const Json& t : c.inputs) seen[c.op].insert(t.at("dtype").get<std::string>());
  for (const std::string& op : all_ops()) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(seen[op].count("f32"));
    EXPECT_TRUE(seen[op].count("i64"));
    const bool bool_rejected =
        op == "neg" || op == "abs" || op == "relu" || op == "floor" || op == "ceil" || op == "round" || op == "sub";
    EXPECT_EQ(seen[op].count("bool") == 1, !bool_rejected);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ElementwiseReference, ::testing::ValuesIn(test::test_devices()),
                         test::device_param_name);

}  // namespace
}  // namespace kiln
