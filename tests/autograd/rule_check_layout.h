// Checks backward rules without the autograd core, for the linalg, layout and index families.
// A gradient case of tests/data/gen_grad_<family>.py holds the forward inputs, one seed gradient
// per seeded output and PyTorch's input gradients (layout in tests/data/rule_refgen_layout.py).
// check_rule builds the ForwardRecord the core would keep, calls the op's rule directly with the
// seeds, and compares every input gradient with PyTorch's and with central finite differences
// of the kiln forward op (f32): L = sum_k <seed_k, output_k>, dL/dx_j ~ (L(x_j+h) - L(x_j-h)) / 2h.
// The ops here are linear in the input differentiated (piecewise linear for sort and topk, whose
// inputs are distinct), so the differences are exact up to f32 rounding of the outputs.
#pragma once
#include <functional>
#include <vector>

#include "kiln/autograd/rules.h"
#include "support/reference.h"

namespace kiln::test {

// The op through the public API, as a user would call it.
using ForwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// One forward op as the autograd core records it. `attrs` are filled exactly as the API
// function in engine/<family>.cpp fills them for this call (canonical dims, triples, ...).
// check_rule verifies that: it submits `kind` with `attrs` directly and expects the same
// outputs as `forward`, so a record the test builds by hand is the record the API would make.
struct RuleCase {
  OpKind kind = OpKind::add;
  OpAttrs attrs;
  ForwardFn forward;
};

struct RuleTolerance {
  Tolerance torch{1e-5, 1e-5};   // sums in another order than PyTorch's
  Tolerance finite{1e-2, 1e-2};  // f32 rounding of the outputs, divided by 2h
  double step = 1e-2;            // h
};

// Runs one gradient case on `device` and reports every mismatch as a test failure.
void check_rule(const RefCase& ref, const RuleCase& rc, Device device, const RuleTolerance& tol = {});

// Helpers the test files share to turn JSON attributes into API arguments.
std::vector<std::int64_t> json_ints(const Json& v);

}  // namespace kiln::test
