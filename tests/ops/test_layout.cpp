// Layout ops against PyTorch (tests/data/gen_layout.py): every op, every dtype, 0-d and empty
// tensors, negative dims, and chains that are non-contiguous views in torch but copies in kiln.
#include <gtest/gtest.h>

#include <set>

#include "ops/layout_apply.h"
#include "support/reference.h"

namespace kiln {
namespace {

using test::Json;

// Layout ops move values without computing on them: every value, NaN and inf included, must
// come out exactly as torch has it.
constexpr test::Tolerance kLayoutExact{0.0, 0.0};

class LayoutReference : public ::testing::TestWithParam<Device> {
 protected:
  std::vector<Tensor> inputs_of(const test::RefCase& c) {
    std::vector<Tensor> xs;
    for (const Json& t : c.inputs) xs.push_back(test::make_tensor(t, GetParam()));
    return xs;
  }

  void expect_outputs(const test::RefCase& c, const std::vector<Tensor>& got) {
    ASSERT_EQ(got.size(), c.outputs.size()) << "number of outputs";
    for (std::size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE("output " + std::to_string(i));
      EXPECT_EQ(got[i].device(), GetParam());
      EXPECT_TRUE(test::matches(got[i], c.outputs[i], kLayoutExact));
    }
  }

  void run_cases(const std::string& op) {
    const auto cases = test::cases_for("layout.json", op);
    ASSERT_FALSE(cases.empty()) << "no reference cases for " << op;
    for (const auto& c : cases) {
      SCOPED_TRACE(c.name);
      expect_outputs(c, test::apply_layout_op(op, c.attrs, inputs_of(c)));
    }
  }
};

TEST_P(LayoutReference, Reshape) { run_cases("reshape"); }
TEST_P(LayoutReference, Flatten) { run_cases("flatten"); }
TEST_P(LayoutReference, Squeeze) { run_cases("squeeze"); }
TEST_P(LayoutReference, Unsqueeze) { run_cases("unsqueeze"); }
TEST_P(LayoutReference, Permute) { run_cases("permute"); }
TEST_P(LayoutReference, Transpose) { run_cases("transpose"); }
TEST_P(LayoutReference, Expand) { run_cases("expand"); }
TEST_P(LayoutReference, Slice) { run_cases("slice"); }
TEST_P(LayoutReference, Narrow) { run_cases("narrow"); }
TEST_P(LayoutReference, Cat) { run_cases("cat"); }
TEST_P(LayoutReference, Stack) { run_cases("stack"); }
TEST_P(LayoutReference, Split) { run_cases("split"); }
TEST_P(LayoutReference, Chunk) { run_cases("chunk"); }
TEST_P(LayoutReference, Flip) { run_cases("flip"); }
TEST_P(LayoutReference, Repeat) { run_cases("repeat"); }
TEST_P(LayoutReference, Pad) { run_cases("pad"); }
TEST_P(LayoutReference, Tril) { run_cases("tril"); }
TEST_P(LayoutReference, Triu) { run_cases("triu"); }

// Steps run on earlier values (the inputs, then every step's outputs), as gen_layout.py did.
TEST_P(LayoutReference, Chains) {
  const auto cases = test::cases_for("layout.json", "chain");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> values = inputs_of(c), last;
    for (const Json& step : c.attrs.at("steps")) {
      std::vector<Tensor> args;
      for (const Json& i : step.at("args")) args.push_back(values.at(i.get<std::size_t>()));
      last = test::apply_layout_op(step.at("op").get<std::string>(), step.at("attrs"), args);
      values.insert(values.end(), last.begin(), last.end());
    }
    expect_outputs(c, last);
  }
}

// A case whose op no test above runs would be silently skipped.
TEST(LayoutReferenceData, EveryCaseIsRun) {
  const std::set<std::string> run = {"reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "expand",
                                     "slice",   "narrow",  "cat",     "stack",     "split",   "chunk",     "flip",
                                     "repeat",  "pad",     "tril",    "triu",      "chain"};
  for (const auto& c : test::load_cases("layout.json")) EXPECT_TRUE(run.count(c.op)) << c.name << ": " << c.op;
}

INSTANTIATE_TEST_SUITE_P(Devices, LayoutReference, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
