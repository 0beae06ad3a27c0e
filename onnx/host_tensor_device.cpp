// HostTensor <-> device tensors (the half of host_tensor.h that needs the engine).
#include "kiln/onnx/host_tensor.h"
#include "kiln/onnx/onnx.h"

namespace kiln::onnx::detail {

Tensor HostTensor::to_tensor(Device device) const {
  const Shape s(shape);
  switch (dtype) {
    case DType::i64: return from_vector(std::vector<std::int64_t>(ints), s, device);
    case DType::bool_: {
      std::vector<bool> b(ints.size());
      for (std::size_t k = 0; k < ints.size(); ++k) b[k] = ints[k] != 0;
      return from_vector(b, s, device);
    }
    case DType::f32: return from_vector(std::vector<float>(floats), s, device);
    case DType::f16:
    case DType::bf16:
      if (!device_supports(device, dtype)) {
        throw UnsupportedError("",
                               std::string(dtype_name(dtype)) + " tensors on " + device.str() + " are not supported",
                               std::string(dtype_name(dtype)) + " on " + device.str());
      }
      return cast(from_vector(std::vector<float>(floats), s, device), dtype);
  }
  throw Error("onnx", "a host tensor of an unknown type");
}

HostTensor HostTensor::from_tensor(const Tensor& t) {
  HostTensor h;
  h.dtype = t.dtype();
  h.shape = t.shape().to_vector();
  switch (t.dtype()) {
    case DType::i64: h.ints = t.to_vector<std::int64_t>().get(); break;
    case DType::bool_: {
      const auto b = t.to_vector<bool>().get();
      h.ints.assign(b.begin(), b.end());
      break;
    }
    case DType::f32: h.floats = t.to_vector<float>().get(); break;
    case DType::f16:
    case DType::bf16: h.floats = cast(t, DType::f32).to_vector<float>().get(); break;
  }
  return h;
}

}  // namespace kiln::onnx::detail
