// The host-only half (the parser and its fuzzer use it without the engine); host_tensor_device.cpp
// moves values to and from devices.
#include "kiln/onnx/host_tensor.h"

#include <bit>
#include <cstring>

namespace kiln::onnx::detail {

std::int64_t HostTensor::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

HostTensor HostTensor::of_ints(std::vector<std::int64_t> values, std::vector<std::int64_t> shape) {
  HostTensor h;
  h.dtype = DType::i64;
  h.ints = std::move(values);
  h.shape = std::move(shape);
  return h;
}

HostTensor HostTensor::of_floats(std::vector<float> values, std::vector<std::int64_t> shape) {
  HostTensor h;
  h.dtype = DType::f32;
  h.floats = std::move(values);
  h.shape = std::move(shape);
  return h;
}

std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1f;
  std::uint32_t mantissa = h & 0x3ff;
  std::uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

float bfloat16_to_float(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t(bits) << 16); }

}  // namespace kiln::onnx::detail
