// ONNX TensorProto -> HostTensor: typed fields, raw little-endian bytes, or external data files
// (bounds-checked, relative to the model's folder, never outside it).
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "kiln/onnx/host_tensor.h"

namespace onnx {
class TensorProto;
}

namespace kiln::onnx::detail {

// `what` names the tensor in errors ("initializer 'fc.weight'"); kiln::Error on anything wrong.
HostTensor read_tensor_proto(const ::onnx::TensorProto& proto, const std::filesystem::path& base_dir,
                             const std::string& what);
// The kiln type of an ONNX elem_type, or throws naming `what`.
DType kiln_dtype(int onnx_elem_type, const std::string& what);
const char* onnx_type_name(int onnx_elem_type);

}  // namespace kiln::onnx::detail
