// Raw bytes in and out of tensors, for file formats and loaders: a tensor's values as the bytes
// of its dtype (f16 and bf16 included, which to_vector has no element type for), and a tensor
// made from bytes already laid out in its dtype, taken over without a copy.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "kiln/engine/future.h"
#include "kiln/engine/tensor.h"

namespace kiln {

// The tensor's values, row-major and little-endian, numel * dtype_size bytes.
Future<std::vector<std::byte>> to_bytes(const Tensor& t);

// A tensor of `shape` and `dtype` on `device` holding `bytes`, which must be numel * dtype_size
// long (kiln::Error "from_bytes" otherwise, or when the device cannot hold the dtype). The vector
// is kept, not copied, until the upload has run.
Tensor from_bytes(std::shared_ptr<const std::vector<std::byte>> bytes, const Shape& shape, DType dtype,
                  Device device = Device::cpu());

// Whether `device` holds tensors of `dtype`: f32, i64 and bool everywhere; f16 and bf16 on a
// Vulkan device with 16-bit storage.
bool device_supports(Device device, DType dtype);

}  // namespace kiln
