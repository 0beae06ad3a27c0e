// Runs one layout op named as in tests/data/gen_layout.py (the same names and attrs torch ran),
// so reference cases and chains of cases share one interpreter.
#pragma once
#include <string>
#include <vector>

#include "support/reference.h"

namespace kiln::test {

std::vector<Tensor> apply_layout_op(const std::string& op, const Json& attrs, const std::vector<Tensor>& xs);

}  // namespace kiln::test
