// Running an elementwise reference case (tests/data/gen_elementwise.py, gen_half.py) as kiln
// calls: the op named by the case, its scalar or tensor forms, on a given device. Shared by the
// op suite and the Vulkan half-type suite.
#pragma once
#include <map>
#include <string>

#include "support/reference.h"

namespace kiln::test {

using UnaryOp = Tensor (*)(Tensor);
struct BinaryOp {
  Tensor (*tt)(Tensor, Tensor);
  Tensor (*ts)(Tensor, double);
  Tensor (*st)(double, Tensor);
};

const std::map<std::string, UnaryOp>& unary_ops();
const std::map<std::string, BinaryOp>& binary_ops();

// True when the case's op is a unary or binary op, cast, where or clamp.
bool is_elementwise_case(const RefCase& c);

// The case's op on tensors made from its inputs on `device`. Attributes as gen_elementwise.py
// documents them: {"scalar": s, "side": "rhs" | "lhs"}, {"min": m, "max": M}, {"dtype": "..."}.
Tensor run_elementwise_case(const RefCase& c, Device device);

}  // namespace kiln::test
