// A tensor's values on the host: initializers as read from the file, constants, and the shape
// arithmetic that the loader evaluates on the host (Shape -> Gather -> Concat -> Reshape) rather
// than as device work. Integers (any ONNX integer type) and bools are held as int64, floats
// (float, double, float16, bfloat16) as float; `dtype` is the kiln type the value becomes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/engine/kiln.h"

namespace kiln::onnx::detail {

struct HostTensor {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<float> floats;       // f32, f16, bf16
  std::vector<std::int64_t> ints;  // i64, bool_

  std::int64_t numel() const;
  bool is_integer() const { return dtype == DType::i64 || dtype == DType::bool_; }
  std::size_t size() const { return is_integer() ? ints.size() : floats.size(); }
  double at(std::size_t i) const { return is_integer() ? double(ints[i]) : double(floats[i]); }

  Tensor to_tensor(Device device) const;
  static HostTensor from_tensor(const Tensor& t);  // reads the values (waits for them)
  static HostTensor of_ints(std::vector<std::int64_t> values, std::vector<std::int64_t> shape);
  static HostTensor of_floats(std::vector<float> values, std::vector<std::int64_t> shape);
};

std::string shape_str(const std::vector<std::int64_t>& shape);
inline std::int64_t shape_numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}
float half_to_float(std::uint16_t bits);
float bfloat16_to_float(std::uint16_t bits);

}  // namespace kiln::onnx::detail
