// Checks one backward rule without the autograd core: builds the ForwardRecord that autograd
// would keep for a forward op, calls the rule with a seed gradient, and compares each input's
// gradient with PyTorch's (tests/data/gen_grad_<family>.py) and with central finite
// differences of the kiln forward op.
//
// How the record gets the API's attrs: a test describes the op as a ForwardOp — the public API
// call, plus the kind and attrs that call puts in its message (built with the same helpers the
// API uses, e.g. normalize_reduce_dims). record_forward() submits (kind, attrs) directly, the way
// autograd re-reads a recorded op, and requires its output to equal the API call's bit for bit,
// so a ForwardOp whose attrs drift from the API fails loudly instead of testing another op.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "kiln/autograd/rules.h"
#include "kiln/engine/kiln.h"
#include "support/reference.h"

namespace kiln::test {

struct ForwardOp {
  OpKind kind = OpKind::add;
  OpAttrs attrs;                                          // exactly what the API puts in its message
  std::function<Tensor(const std::vector<Tensor>&)> api;  // the public call, on the same inputs
};

// The kind whose op_list.def name is `name` (the "op" of a reference case).
OpKind op_kind_named(const std::string& name);

// Runs `op` on `inputs` and fills the record like autograd: metadata of every input and output,
// inputs / outputs kept only when the rule asks for them. Adds a test failure when submitting
// (kind, attrs) does not reproduce the API call.
autograd::ForwardRecord record_forward(const ForwardOp& op, const std::vector<Tensor>& inputs);

// Calls the rule of `rec.kind` with `seed` as the output's gradient. Adds a test failure when
// the op has no rule or the rule returns the wrong number of gradients.
std::vector<Tensor> run_rule(const autograd::ForwardRecord& rec, const Tensor& seed);

// Central differences of sum(seed * api(inputs)) with respect to every element of
// inputs[which] (f32), with step eps; accumulated in double on the host.
std::vector<double> finite_difference(const ForwardOp& op, const std::vector<Tensor>& inputs, const Tensor& seed,
                                      std::size_t which, double eps);

// Central differences err by ~eps^2 f''' / 6 (about 2e-3 relative for 1 / x near x = 0.2, the
// worst input the generators allow) plus f32 rounding of the forward, ~1e-7 |f| / eps.
struct FdTolerance {
  double eps = 1e-2;
  double rtol = 1e-2;
  double atol = 1e-3;
};

// Compares `grad` (f32, the shape of inputs[which]) with finite_difference().
::testing::AssertionResult matches_finite_difference(const Tensor& grad, const ForwardOp& op,
                                                     const std::vector<Tensor>& inputs, const Tensor& seed,
                                                     std::size_t which, FdTolerance tol = {});

// A gradient reference case (layout in tests/data/gradgen.py): the forward inputs on
// `device`, the seed (the last input) and the expected gradients (null Json: no gradient).
struct GradCase {
  std::vector<Tensor> inputs;
  Tensor seed;
  std::vector<Json> expected;
  bool finite_differences = true;
};
GradCase load_grad_case(const RefCase& c, Device device);

// The whole check of one case: record, run the rule, compare every input gradient with torch
// (undefined exactly where torch has none) and, when the case allows it, with finite differences.
void check_rule(const ForwardOp& op, const GradCase& gc, Tolerance torch_tol, FdTolerance fd_tol = {});

}  // namespace kiln::test
