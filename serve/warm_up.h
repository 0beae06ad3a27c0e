// Warming a model up before it serves: runs its forward pass once for every batch size it will
// see, so that every kernel it needs is compiled (fused CPU programs, Vulkan pipelines) and every
// buffer size is in the device's pool before the first real request; on the CPU the model's
// weights are packed for its small products then too (counters().weights_packed). Without it the
// first requests of each size pay for compilation and packing; after it,
// counters().plan_cache_misses and weights_packed stay put.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln::serve {

// Runs `forward` on zeros of shape [b, item_shape...] for each b in `batch_sizes`, on `device`,
// twice, and waits for each result, with gradients off (NoGradGuard), as a service runs it.
// Errors of the forward pass propagate (a wrong shape is found here, not by the first user).
void warm_up(const std::function<Tensor(const Tensor&)>& forward, const Shape& item_shape,
             const std::vector<std::size_t>& batch_sizes, Device device = Device::cpu());

}  // namespace kiln::serve
