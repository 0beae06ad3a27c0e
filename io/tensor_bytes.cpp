// Files' bytes in and out of tensors, through the engine's public calls (engine/bytes.h) with
// the errors named after the file operation that asked.
#include "kiln/io/tensor_bytes.h"

#include "kiln/engine/bytes.h"

namespace kiln::io::detail {

std::vector<std::byte> read_tensor_bytes(const Tensor& t, const char* op) {
  KILN_CHECK(t.defined(), op, "the tensor is undefined");
  return to_bytes(t).get();
}

void check_device_holds(Device device, DType dtype, const char* op, const std::string& what) {
  KILN_CHECK(device_supports(device, dtype), op,
             what + ": " + dtype_name(dtype) + " is not supported on " + device.str() +
                 " (f16 and bf16 need a Vulkan device with 16-bit storage); ask for a conversion to f32");
}

Tensor tensor_from_bytes(std::shared_ptr<const std::vector<std::byte>> bytes, const Shape& shape, DType dtype,
                         Device device) {
  return from_bytes(std::move(bytes), shape, dtype, device);
}

}  // namespace kiln::io::detail
