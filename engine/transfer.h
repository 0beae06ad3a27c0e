// Moving tensors between devices.
#pragma once
#include "kiln/engine/tensor.h"

namespace kiln {

// A copy of `x` on `device` (x itself when it is already there). Asynchronous like every op:
// the source device gets a read of x and the destination an upload, both at call time, so
// later ops on either device are ordered after the transfer. The destination's upload waits
// for the source's read when it runs; a failure of x reaches the copy's futures.
Tensor to(Tensor x, Device device);

}  // namespace kiln
