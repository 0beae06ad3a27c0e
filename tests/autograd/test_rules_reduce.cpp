// Backward rules of the reduce family against PyTorch (tests/data/gen_grad_reduce.py ->
// grad_reduce.json) and against finite differences of the kiln forward op.
#include <gtest/gtest.h>

#include "autograd/rule_check.h"
#include "kiln/ops/reduce_rules.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

using test::ForwardOp;
using test::RefCase;

TensorIr meta_of(const Tensor& x) { return TensorIr{0, x.shape(), x.dtype(), TensorStatus::ReadOnly}; }

// The ForwardOp of a case: the API call and the attrs engine/reduce.cpp puts in its message —
// dims normalized by the same normalize_reduce_dims / normalize_reduce_dim the API calls.
ForwardOp forward_of(const RefCase& c, const Tensor& x) {
  ForwardOp op;
  op.kind = test::op_kind_named(c.op);
  const test::Json& a = c.attrs;
  const char* name = op_name(op.kind);
  if (a.contains("dim")) {  // cumsum, softmax, log_softmax
    const std::int64_t dim = a.at("dim").get<std::int64_t>();
    op.attrs.dim = normalize_reduce_dim(name, dim, meta_of(x));
    op.attrs.flag = true;
    const OpKind k = op.kind;
    op.api = [k, dim](const std::vector<Tensor>& v) {
      return k == OpKind::cumsum    ? cumsum(v[0], dim)
             : k == OpKind::softmax ? softmax(v[0], dim)
                                    : log_softmax(v[0], dim);
    };
    return op;
  }
  const Dims dims = a.at("dims").get<Dims>();
  const bool keepdim = a.at("keepdim").get<bool>();
  const double correction = a.value("correction", 1.0);
  op.attrs.ints = normalize_reduce_dims(name, dims, meta_of(x));
  op.attrs.keepdim = keepdim;
  op.attrs.scalar = op.kind == OpKind::var || op.kind == OpKind::std ? correction : 0.0;
  op.api = [k = op.kind, dims, keepdim, correction](const std::vector<Tensor>& v) {
    switch (k) {
      case OpKind::sum: return sum(v[0], dims, keepdim);
      case OpKind::mean: return mean(v[0], dims, keepdim);
      case OpKind::prod: return prod(v[0], dims, keepdim);
      case OpKind::max: return max(v[0], dims, keepdim);
      case OpKind::min: return min(v[0], dims, keepdim);
      case OpKind::var: return var(v[0], dims, correction, keepdim);
      case OpKind::std: return kiln::std(v[0], dims, correction, keepdim);
      case OpKind::logsumexp: return logsumexp(v[0], dims, keepdim);
      default: throw std::runtime_error("no kiln reduction for this case");
    }
  };
  return op;
}

class ReduceRules : public ::testing::TestWithParam<Device> {
 protected:
  void check_op(const std::string& op) {
    const std::vector<RefCase> cases = test::cases_for("grad_reduce.json", op);
    ASSERT_FALSE(cases.empty()) << "no gradient cases for " << op;
    for (const RefCase& c : cases) {
      SCOPED_TRACE(c.name);
      const test::GradCase gc = test::load_grad_case(c, GetParam());
      // f32 sums of up to 24 terms (var's mean, prod's partial products) differ from torch's
      // order of summation by a few ulps.
      test::check_rule(forward_of(c, gc.inputs.at(0)), gc, {1e-4, 1e-5});
    }
  }
};

TEST_P(ReduceRules, sum) { check_op("sum"); }
TEST_P(ReduceRules, mean) { check_op("mean"); }
TEST_P(ReduceRules, prod) { check_op("prod"); }
TEST_P(ReduceRules, max) { check_op("max"); }
TEST_P(ReduceRules, min) { check_op("min"); }
TEST_P(ReduceRules, var) { check_op("var"); }
TEST_P(ReduceRules, std) { check_op("std"); }
TEST_P(ReduceRules, logsumexp) { check_op("logsumexp"); }
TEST_P(ReduceRules, cumsum) { check_op("cumsum"); }
TEST_P(ReduceRules, softmax) { check_op("softmax"); }
TEST_P(ReduceRules, log_softmax) { check_op("log_softmax"); }

// argmax/argmin/any/all have no rule; the rest keep only what their gradient needs.
TEST(ReduceRuleTable, DifferentiabilityAndSaves) {
  const auto& t = autograd::backward_rules();
  for (OpKind k : {OpKind::argmax, OpKind::argmin, OpKind::any, OpKind::all}) EXPECT_EQ(t[k].fn, nullptr) << op_name(k);
  for (OpKind k : {OpKind::sum, OpKind::mean, OpKind::cumsum})
    EXPECT_TRUE(t[k].fn && !t[k].saves_inputs && !t[k].saves_outputs) << op_name(k) << " needs only shapes";
  for (OpKind k : {OpKind::softmax, OpKind::log_softmax})
    EXPECT_TRUE(t[k].fn && !t[k].saves_inputs && t[k].saves_outputs) << op_name(k) << " needs only its output";
  for (OpKind k : {OpKind::prod, OpKind::var})
    EXPECT_TRUE(t[k].fn && t[k].saves_inputs && !t[k].saves_outputs) << op_name(k) << " needs only its input";
}

INSTANTIATE_TEST_SUITE_P(Devices, ReduceRules, ::testing::ValuesIn(kiln::test::test_devices()),
                         kiln::test::device_param_name);

}  // namespace
}  // namespace kiln
