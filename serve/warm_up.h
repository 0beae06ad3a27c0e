// Warming a model up before it serves: runs its forward pass once for every batch size it will
// see, so that every kernel it needs is compiled (fused CPU programs, Vulkan pipelines) and every
// buffer size is in the device's pool before the first real request. Without it the first
// request of each size pays for compilation; after it, counters().plan_cache_misses stays put.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "engine/tensor.h"

namespace kiln::serve {

// Runs `forward` on zeros of shape [b, item_shape...] for each b in `batch_sizes`, on `device`,
// and waits for each result, with gradients off (NoGradGuard), as a service runs it. Errors of the forward pass propagate (a wrong shape is found here,
// not by the first user).
void warm_up(const std::function<Tensor(const Tensor&)>& forward, const Shape& item_shape,
             const std::vector<std::size_t>& batch_sizes, Device device = Device::cpu());

}  // namespace kiln::serve
