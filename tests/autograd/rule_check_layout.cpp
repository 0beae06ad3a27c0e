#include "autograd/rule_check_layout.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "support/reference.h"
#include "kiln/engine/submit.h"

namespace kiln::test {

namespace {


::testing::AssertionResult close_to(const Tensor& actual, const Shape& shape, const std::vector<double>& expected,
                                    Tolerance tol) {
  if (!actual.defined()) return ::testing::AssertionFailure() << "the gradient is undefined";
  if (actual.shape() != shape)
    return ::testing::AssertionFailure() << "shape " << actual.shape().str() << ", expected " << shape.str();
  if (actual.dtype() != DType::f32)
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.dtype()) << ", expected f32";
  const std::vector<double> got = test::host_values(actual);
  std::ostringstream bad;
  int n_bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - expected[i]) <= tol.atol + tol.rtol * std::abs(expected[i])) continue;
    if (n_bad++ < 5) bad << "\n  [" << i << "] got " << got[i] << ", expected " << expected[i];
  }
  if (n_bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << n_bad << " of " << got.size() << " values differ:" << bad.str();
}

// L = sum_k <seed_k, output_k>, in double on the host.
double loss(const std::vector<Tensor>& outputs, const std::vector<Tensor>& seeds) {
  double l = 0.0;
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    if (!seeds[k].defined()) continue;
    const std::vector<double> y = test::host_values(outputs[k]), s = test::host_values(seeds[k]);
    for (std::size_t j = 0; j < y.size(); ++j) l += y[j] * s[j];
  }
  return l;
}

// Central differences of L with respect to every element of input i, with the step the f32
// input really moved by (x + h is rounded).
std::vector<double> finite_differences(const RuleCase& rc, std::vector<Tensor> inputs, std::size_t i,
                                       const std::vector<Tensor>& seeds, double h, Device device) {
  const Shape shape = inputs[i].shape();
  const std::vector<float> x = inputs[i].to_vector<float>().get();
  std::vector<double> grad(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    std::vector<float> plus = x, minus = x;
    plus[j] = static_cast<float>(x[j] + h);
    minus[j] = static_cast<float>(x[j] - h);
    inputs[i] = from_vector(plus, shape, device);
    const double lp = loss(rc.forward(inputs), seeds);
    inputs[i] = from_vector(minus, shape, device);
    const double lm = loss(rc.forward(inputs), seeds);
    grad[j] = (lp - lm) / (static_cast<double>(plus[j]) - static_cast<double>(minus[j]));
  }
  return grad;
}

// Submitting the primitive with the hand-built attrs must give what the API call gave.
void expect_attrs_reproduce_forward(const RuleCase& rc, std::vector<Tensor> inputs, const std::vector<Tensor>& outs,
                                    Device device) {
  const std::vector<Tensor> direct = detail::submit(rc.kind, inputs.data(), inputs.size(), rc.attrs, device);
  ASSERT_EQ(direct.size(), outs.size()) << "outputs of the primitive submitted with the record's attrs";
  for (std::size_t k = 0; k < outs.size(); ++k) {
    EXPECT_EQ(direct[k].shape(), outs[k].shape()) << "output " << k << " with the record's attrs";
    EXPECT_EQ(direct[k].dtype(), outs[k].dtype()) << "output " << k << " with the record's attrs";
    if (direct[k].shape() == outs[k].shape() && direct[k].dtype() == outs[k].dtype()) {
      EXPECT_EQ(test::host_values(direct[k]), test::host_values(outs[k])) << "output " << k << " with the record's attrs";
    }
  }
}

}  // namespace

std::vector<std::int64_t> json_ints(const Json& v) { return v.get<std::vector<std::int64_t>>(); }

void check_rule(const RefCase& ref, const RuleCase& rc, Device device, const RuleTolerance& tol) {
  SCOPED_TRACE(ref.name);
  const auto grads_of = json_ints(ref.attrs.at("grads"));
  const auto seeded = json_ints(ref.attrs.at("seeded"));
  const std::size_t n_inputs = ref.inputs.size() - seeded.size();
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < n_inputs; ++i) inputs.push_back(make_tensor(ref.inputs[i], device));

  const std::vector<Tensor> outs = rc.forward(inputs);
  expect_attrs_reproduce_forward(rc, inputs, outs, device);

  std::vector<Tensor> seeds(outs.size());
  for (std::size_t j = 0; j < seeded.size(); ++j)
    seeds[static_cast<std::size_t>(seeded[j])] = make_tensor(ref.inputs[n_inputs + j], device);

  const autograd::BackwardRule& rule = autograd::backward_rules()[rc.kind];
  ASSERT_NE(rule.fn, nullptr) << "no backward rule for " << ref.op;
  autograd::ForwardRecord rec;
  rec.kind = rc.kind;
  rec.attrs = rc.attrs;
  for (const Tensor& t : inputs) rec.input_meta.push_back(TensorIr{0, t.shape(), t.dtype(), TensorStatus::ReadOnly});
  for (const Tensor& t : outs) rec.output_meta.push_back(TensorIr{0, t.shape(), t.dtype(), TensorStatus::NotInit});
  if (rule.saves_inputs) rec.inputs = inputs;
  if (rule.saves_outputs) rec.outputs = outs;

  const std::vector<Tensor> grads = rule.fn(rec, seeds);
  ASSERT_EQ(grads.size(), n_inputs) << "one gradient per input";
  for (std::size_t i = 0; i < n_inputs; ++i) {
    const auto it = std::find(grads_of.begin(), grads_of.end(), static_cast<std::int64_t>(i));
    if (it == grads_of.end()) {
      EXPECT_FALSE(grads[i].defined()) << "input " << i << " takes no gradient";
      continue;
    }
    const Json& expected = ref.outputs[static_cast<std::size_t>(it - grads_of.begin())];
    EXPECT_TRUE(close_to(grads[i], inputs[i].shape(), json_values(expected), tol.torch))
        << "gradient of input " << i << " against PyTorch";
    if (!grads[i].defined() || inputs[i].numel() == 0) continue;
    EXPECT_TRUE(
        close_to(grads[i], inputs[i].shape(), finite_differences(rc, inputs, i, seeds, tol.step, device), tol.finite))
        << "gradient of input " << i << " against finite differences";
  }
}

}  // namespace kiln::test
