// Checks a kiln::nn function against a reference case of tests/data/gen_nn_*.py (layout in
// tests/data/nngen.py): the forward outputs, the gradient of every input through autograd
// (backward from the first output with the case's seed) and, on the CPU where the case allows
// it, central finite differences of the same function.
#pragma once
#include "support/expect_error.h"
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/kiln.h"
#include "support/reference.h"

namespace kiln::test {

// The kiln call of a case: its tensor inputs (the seed excluded) and attrs -> its outputs.
using NnCall = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const Json& attrs)>;

struct NnTolerance {
  // kiln composes these functions from f32 ops, torch's reference is float64: each value is
  // within a few f32 roundings of a sum or a normalization of about ten terms.
  Tolerance forward{1e-5, 1e-5};
  Tolerance gradient{2e-5, 2e-5};
};

// Runs `call` on case `c` on `device`. Inputs that have a reference gradient become leaves
// (require_grad); the others are passed as they are.
void check_nn_case(const RefCase& c, Device device, const NnCall& call, NnTolerance tol = {});

// check_nn_case for every case of `op` in `file`; fails when there is none.
void check_nn_op(const std::string& file, const std::string& op, Device device, const NnCall& call,
                 NnTolerance tol = {});

// Expects fn() to throw kiln::Error whose op is `op` and whose message contains each of `parts`.

// The reduction named by attrs["reduction"] ("none", "mean", "sum", "batchmean").
template <class R>
R reduction_of(const Json& attrs) {
  const std::string r = attrs.at("reduction").get<std::string>();
  if (r == "none") return R::none;
  if (r == "sum") return R::sum;
  if (r == "batchmean") return R::batchmean;
  return R::mean;
}

}  // namespace kiln::test
