#include "nn/functional_check.h"

#include <cmath>
#include <sstream>

namespace kiln::test {
namespace {

// Central differences of sum(seed * call(inputs)[0]) with respect to each element of
// inputs[which], accumulated in double on the host. Central differences err by ~step^2 f''' / 6
// and by the f32 rounding of the forward, ~1e-7 |f| / step: 1e-2 relative, 2e-3 absolute.
::testing::AssertionResult matches_finite_differences(const Tensor& grad, const NnCall& call,
                                                      const std::vector<Tensor>& inputs, const Json& attrs,
                                                      const Tensor& seed, std::size_t which) {
  constexpr double kStep = 1e-2, kRtol = 1e-2, kAtol = 2e-3;
  const Tensor& x = inputs[which];
  const std::vector<float> base = x.to_vector<float>().get();
  const std::vector<double> weights = host_values(seed);
  const std::vector<double> got = host_values(grad);
  std::ostringstream report;
  int bad = 0;
  for (std::size_t j = 0; j < base.size(); ++j) {
    double sides[2];
    double taken = 0.0;
    for (int s = 0; s < 2; ++s) {
      std::vector<float> v = base;
      v[j] = static_cast<float>(base[j] + (s == 0 ? kStep : -kStep));
      taken += (s == 0 ? 1.0 : -1.0) * v[j];
      std::vector<Tensor> args = inputs;
      args[which] = from_vector(std::move(v), x.shape(), x.device());
      const std::vector<double> out = host_values(call(args, attrs).at(0));
      sides[s] = 0.0;
      for (std::size_t k = 0; k < out.size(); ++k) sides[s] += weights.at(k) * out[k];
    }
    const double want = (sides[0] - sides[1]) / taken;
    if (std::abs(got.at(j) - want) > kAtol + kRtol * std::abs(want) && ++bad <= 5)
      report << " [" << j << "] autograd " << got[j] << ", finite difference " << want;
  }
  if (bad)
    return ::testing::AssertionFailure() << "input " << which << ": " << bad << " of " << got.size()
                                         << " values differ from finite differences:" << report.str();
  return ::testing::AssertionSuccess();
}

}  // namespace

void check_nn_case(const RefCase& c, Device device, const NnCall& call, NnTolerance tol) {
  SCOPED_TRACE(c.name + " on " + device.str());
  const std::size_t n_in = c.inputs.size() - 1;
  const std::size_t n_out = c.attrs.at("outputs").get<std::size_t>();
  ASSERT_EQ(c.outputs.size(), n_out + n_in) << "a case lists its outputs, then one gradient per input";
  std::vector<Tensor> plain, leaves;
  for (std::size_t i = 0; i < n_in; ++i) {
    plain.push_back(make_tensor(c.inputs[i], device));
    const bool has_grad = !c.outputs[n_out + i].is_null();
    leaves.push_back(has_grad ? require_grad(plain.back()) : plain.back());
  }
  const Tensor seed = make_tensor(c.inputs.back(), device);

  const std::vector<Tensor> outs = call(leaves, c.attrs);
  ASSERT_EQ(outs.size(), n_out);
  for (std::size_t i = 0; i < n_out; ++i) {
    ASSERT_TRUE(outs[i].defined()) << "output " << i;
    EXPECT_TRUE(matches(outs[i], c.outputs[i], tol.forward)) << "output " << i;
  }
  bool any_grad = false;
  for (std::size_t i = 0; i < n_in; ++i) any_grad = any_grad || !c.outputs[n_out + i].is_null();
  if (!any_grad) return;  // a forward-only case
  const Gradients grads = backward(outs[0], seed);
  for (std::size_t i = 0; i < n_in; ++i) {
    const Json& want = c.outputs[n_out + i];
    if (want.is_null()) continue;
    SCOPED_TRACE("gradient of input " + std::to_string(i));
    ASSERT_TRUE(grads.contains(leaves[i])) << "torch gives this input a gradient";
    EXPECT_TRUE(matches(grads.get(leaves[i]), want, tol.gradient)) << "against torch";
    if (device.kind == DeviceKind::cpu && c.attrs.value("fd", false)) {
      NoGradGuard no_grad;
      EXPECT_TRUE(matches_finite_differences(grads.get(leaves[i]), call, plain, c.attrs, seed, i));
    }
  }
}

void check_nn_op(const std::string& file, const std::string& op, Device device, const NnCall& call, NnTolerance tol) {
  const std::vector<RefCase> cases = cases_for(file, op);
  ASSERT_FALSE(cases.empty()) << "no cases of " << op << " in " << file;
  for (const RefCase& c : cases) check_nn_case(c, device, call, tol);
}

}  // namespace kiln::test
