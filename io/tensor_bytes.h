// Raw bytes in and out of kiln tensors, for files: reading a tensor's bytes whatever its dtype
// (f16 and bf16 included, which Tensor::to_vector has no element type for) and making a tensor
// on a device from bytes already laid out in its dtype.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln::io::detail {

// Waits for the tensor's value and returns its bytes (row-major, little-endian).
std::vector<std::byte> read_tensor_bytes(const Tensor& t, const char* op);

// Whether `device` can hold tensors of `dtype` (f16 and bf16 need a Vulkan device with 16-bit
// storage); `what` names the tensor in the error otherwise.
void check_device_holds(Device device, DType dtype, const char* op, const std::string& what);

// A tensor of `dtype` and `shape` on `device` holding `bytes` (numel * dtype_size bytes).
Tensor tensor_from_bytes(std::shared_ptr<const std::vector<std::byte>> bytes, const Shape& shape, DType dtype,
                         Device device);

}  // namespace kiln::io::detail
