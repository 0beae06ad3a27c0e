// How an op's error message names a tensor and a list of sizes: "f32[2, 3, 4]", "[2, 3]".
// Not public API.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln::detail {

std::string describe(const Tensor& x);                     // "f32[2, 3, 4]", "(undefined)"
std::string ints_str(const std::vector<std::int64_t>& v);  // "[2, 3]"

}  // namespace kiln::detail
