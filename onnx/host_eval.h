// Host forms of the ops that shape arithmetic uses (binary arithmetic and comparisons with
// broadcasting, on small integer or float tensors), so that a graph's Shape -> Gather -> Concat
// chains never become device work.
#pragma once
#include <functional>
#include <optional>

#include "kiln/onnx/host_tensor.h"

namespace kiln::onnx::detail {

// Host evaluation is for shape-sized values only: above this many elements ops run on the device.
inline constexpr std::int64_t kHostLimit = 1 << 16;

// numpy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<std::vector<std::int64_t>> broadcast_shapes(const std::vector<std::int64_t>& a,
                                                          const std::vector<std::int64_t>& b);
// out[i] = f(a[...], b[...]) with broadcasting; integers in, integers out unless `out` says
// otherwise. The caller checks that the shapes broadcast.
HostTensor host_binary(const HostTensor& a, const HostTensor& b, DType out,
                       const std::function<std::int64_t(std::int64_t, std::int64_t)>& on_ints,
                       const std::function<double(double, double)>& on_floats);
HostTensor host_cast(const HostTensor& x, DType dtype);

}  // namespace kiln::onnx::detail
