// Running a reduction reference case (tests/data/gen_reduce.py, gen_half.py) as a kiln call on
// a given input. Attributes: {"dims": [...], "keepdim": bool, "correction": c} for the
// reductions over dims, {"dim": d} for argmax/argmin along a dim, cumsum, softmax, log_softmax.
// Shared by the op suite and the Vulkan half-type suite.
#pragma once
#include "support/reference.h"

namespace kiln::test {

Tensor run_reduce_case(const RefCase& c, Tensor x);

}  // namespace kiln::test
