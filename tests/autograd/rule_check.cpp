#include "autograd/rule_check.h"

#include <cmath>
#include <sstream>

#include "support/reference.h"
#include "kiln/engine/submit.h"
#include "kiln/ops/registry.h"

namespace kiln::test {

namespace {


bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TensorIr meta_of(const Tensor& t) { return TensorIr{0, t.shape(), t.dtype(), TensorStatus::ReadOnly}; }

}  // namespace

OpKind op_kind_named(const std::string& name) {
  for (std::size_t i = 0; i < kOpCount; ++i)
    if (name == op_name(static_cast<OpKind>(i))) return static_cast<OpKind>(i);
  throw std::runtime_error("rule_check: no op named " + name);
}

autograd::ForwardRecord record_forward(const ForwardOp& op, const std::vector<Tensor>& inputs) {
  // Copies keep the caller's handles alive, so the op sees read-only inputs, as under autograd.
  std::vector<Tensor> args = inputs;
  const Device device = inputs.at(0).device();
  std::vector<Tensor> outputs = detail::submit(op.kind, args.data(), args.size(), op.attrs, device);

  const Tensor from_api = op.api(inputs);
  EXPECT_EQ(outputs.size(), 1u) << op_name(op.kind) << ": the rules under test have one output";
  EXPECT_EQ(from_api.shape(), outputs.at(0).shape()) << op_name(op.kind) << ": the attrs do not match the API";
  EXPECT_EQ(from_api.dtype(), outputs.at(0).dtype()) << op_name(op.kind) << ": the attrs do not match the API";
  if (from_api.shape() == outputs.at(0).shape() && from_api.dtype() == outputs.at(0).dtype()) {
    const std::vector<double> a = test::host_values(from_api), b = test::host_values(outputs.at(0));
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_value(a[i], b[i])) {
        ADD_FAILURE() << op_name(op.kind) << ": submitting the record's attrs gives " << b[i] << " at [" << i
                      << "], the API gives " << a[i] << ": the attrs do not match the API";
        break;
      }
  }

  const autograd::BackwardRule& rule = autograd::backward_rules()[op.kind];
  autograd::ForwardRecord rec;
  rec.kind = op.kind;
  rec.attrs = op.attrs;
  for (const Tensor& t : inputs) rec.input_meta.push_back(meta_of(t));
  for (const Tensor& t : outputs) rec.output_meta.push_back(meta_of(t));
  if (rule.saves_inputs) rec.inputs = inputs;
  if (rule.saves_outputs) rec.outputs = outputs;
  return rec;
}

std::vector<Tensor> run_rule(const autograd::ForwardRecord& rec, const Tensor& seed) {
  const autograd::BackwardRule& rule = autograd::backward_rules()[rec.kind];
  if (!rule.fn) {
    ADD_FAILURE() << op_name(rec.kind) << " has no backward rule";
    return std::vector<Tensor>(rec.input_meta.size());
  }
  std::vector<Tensor> grads = rule.fn(rec, {seed});
  EXPECT_EQ(grads.size(), rec.input_meta.size()) << op_name(rec.kind) << ": one gradient per input";
  grads.resize(rec.input_meta.size());
  return grads;
}

std::vector<double> finite_difference(const ForwardOp& op, const std::vector<Tensor>& inputs, const Tensor& seed,
                                      std::size_t which, double eps) {
  const Tensor& x = inputs.at(which);
  const std::vector<float> base = x.to_vector<float>().get();
  const std::vector<double> w = test::host_values(seed);
  // Submit every perturbed forward first, then read: the engine runs them while we wait.
  std::vector<Future<std::vector<float>>> plus, minus;
  auto perturbed = [&](std::size_t j, double step) {
    std::vector<float> v = base;
    v[j] = static_cast<float>(v[j] + step);
    std::vector<Tensor> args = inputs;
    args[which] = from_vector(std::move(v), x.shape(), x.device());
    return op.api(args).to_vector<float>();
  };
  for (std::size_t j = 0; j < base.size(); ++j) {
    plus.push_back(perturbed(j, eps));
    minus.push_back(perturbed(j, -eps));
  }
  std::vector<double> fd(base.size());
  for (std::size_t j = 0; j < base.size(); ++j) {
    const std::vector<float> p = plus[j].get(), m = minus[j].get();
    double acc = 0.0;
    for (std::size_t k = 0; k < p.size(); ++k) acc += w.at(k) * (static_cast<double>(p[k]) - m[k]);
    // Each perturbed input is rounded to f32: divide by the step actually taken.
    const double taken =
        static_cast<double>(static_cast<float>(base[j] + eps)) - static_cast<double>(static_cast<float>(base[j] - eps));
    fd[j] = acc / taken;
  }
  return fd;
}

::testing::AssertionResult matches_finite_difference(const Tensor& grad, const ForwardOp& op,
                                                     const std::vector<Tensor>& inputs, const Tensor& seed,
                                                     std::size_t which, FdTolerance tol) {
  if (grad.shape() != inputs.at(which).shape())
    return ::testing::AssertionFailure() << "gradient shape " << grad.shape().str() << ", input shape "
                                         << inputs.at(which).shape().str();
  const std::vector<double> got = test::host_values(grad);
  const std::vector<double> want = finite_difference(op, inputs, seed, which, tol.eps);
  std::ostringstream report;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - want[i]) <= tol.atol + tol.rtol * std::abs(want[i])) continue;
    if (++bad <= 5) report << " [" << i << "] rule " << got[i] << ", finite difference " << want[i];
  }
  if (bad)
    return ::testing::AssertionFailure() << "input " << which << ": " << bad << " of " << got.size()
                                         << " values differ from finite differences:" << report.str();
  return ::testing::AssertionSuccess();
}

GradCase load_grad_case(const RefCase& c, Device device) {
  GradCase gc;
  for (std::size_t i = 0; i + 1 < c.inputs.size(); ++i) gc.inputs.push_back(make_tensor(c.inputs[i], device));
  gc.seed = make_tensor(c.inputs.back(), device);
  gc.expected = c.outputs;
  gc.finite_differences = c.attrs.value("fd", true);
  return gc;
}

void check_rule(const ForwardOp& op, const GradCase& gc, Tolerance torch_tol, FdTolerance fd_tol) {
  const autograd::ForwardRecord rec = record_forward(op, gc.inputs);
  const std::vector<Tensor> grads = run_rule(rec, gc.seed);
  ASSERT_EQ(gc.expected.size(), gc.inputs.size()) << "the case needs one expected gradient per input";
  for (std::size_t i = 0; i < grads.size(); ++i) {
    SCOPED_TRACE("input " + std::to_string(i));
    if (gc.expected[i].is_null()) {
      EXPECT_FALSE(grads[i].defined()) << "torch gives this input no gradient";
      continue;
    }
    ASSERT_TRUE(grads[i].defined()) << "torch gives this input a gradient";
    EXPECT_TRUE(matches(grads[i], gc.expected[i], torch_tol)) << "against torch";
    if (gc.finite_differences && gc.inputs[i].dtype() == DType::f32) {
      EXPECT_TRUE(matches_finite_difference(grads[i], op, gc.inputs, gc.seed, i, fd_tol));
    }
  }
}

}  // namespace kiln::test
