// Running an index-family reference case (tests/data/gen_index.py, gen_half.py) as kiln calls on
// a device: its outputs in order (sort and topk give values and indices). Shared by the op suite
// and the Vulkan half-type suite.
#pragma once
#include <vector>

#include "support/reference.h"

namespace kiln::test {

// The inputs are handed over to the op unless `kept` holds a second handle to each.
std::vector<Tensor> run_index_case(const RefCase& c, Device d, std::vector<Tensor>* kept = nullptr);

}  // namespace kiln::test
