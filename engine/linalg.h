// Matrix products, with torch.matmul's rules: 1-D operands are promoted and the added dim
// removed again; batch dims broadcast.
#pragma once
#include "engine/tensor.h"

namespace kiln {

Tensor matmul(Tensor a, Tensor b);

}  // namespace kiln
