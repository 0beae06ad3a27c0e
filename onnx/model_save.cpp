// Model::save: the loaded ModelProto with each initializer that is a parameter or buffer set to
// its current value, written next to the target and renamed over it once complete.
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <span>

#include "kiln/io/atomic_file.h"
#include "kiln/onnx/graph.h"

namespace kiln::onnx {

namespace {

// The raw little-endian bytes of `t` as ONNX type `type` (float, double or float16 files keep
// their type; the values come from kiln's f32 or f16 tensor).
std::string raw_bytes(const Tensor& t, int type, const std::string& name) {
  const auto values = cast(to(t, Device::cpu()), DType::f32).to_vector<float>().get();
  std::string raw;
  if (type == ::onnx::TensorProto::FLOAT) {
    raw.resize(values.size() * sizeof(float));
    if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  } else if (type == ::onnx::TensorProto::DOUBLE) {
    std::vector<double> d(values.begin(), values.end());
    raw.resize(d.size() * sizeof(double));
    if (!d.empty()) std::memcpy(raw.data(), d.data(), raw.size());
  } else {
    throw Error("onnx", "save: initializer '" + name + "' of ONNX type " + std::to_string(type) +
                            " cannot be written (float and double can)");
  }
  return raw;
}

}  // namespace

void Model::save(const std::filesystem::path& path) const {
  KILN_CHECK(graph_ != nullptr, "onnx", "save of an empty model");
  ::onnx::ModelProto proto;
  KILN_CHECK(proto.ParseFromString(graph_->serialized), "onnx", "save: the loaded model no longer parses");
  std::map<std::string, Tensor> values;
  for (std::size_t k = 0; k < parameters_.size(); ++k) values[parameter_names_[k]] = parameters_[k].value();
  for (std::size_t k = 0; k < buffers_.size(); ++k) values[buffer_names_[k]] = buffers_[k].get();
  for (auto& init : *proto.mutable_graph()->mutable_initializer()) {
    const auto it = values.find(init.name());
    if (it == values.end()) {
      // A constant: kept as it is, but inline (its external file is not copied along).
      KILN_CHECK(init.data_location() != ::onnx::TensorProto::EXTERNAL, "onnx",
                 "save: constant initializer '" + init.name() + "' lives in an external file");
      continue;
    }
    const Tensor& t = it->second;
    std::vector<std::int64_t> dims(init.dims().begin(), init.dims().end());
    KILN_CHECK(
        dims == t.shape().to_vector(), "onnx",
        "save: '" + init.name() + "' is " + t.shape().str() + ", the file's initializer " + detail::shape_str(dims));
    const std::string raw = raw_bytes(t, init.data_type(), init.name());
    init.clear_float_data();
    init.clear_double_data();
    init.clear_int32_data();
    init.clear_external_data();
    init.set_data_location(::onnx::TensorProto::DEFAULT);
    init.set_raw_data(raw);
  }
  std::string bytes;
  KILN_CHECK(proto.SerializeToString(&bytes), "onnx", "save: the model does not serialize (over 2 GiB?)");
  io::detail::AtomicFile file(path, "onnx save");
  file.write(std::as_bytes(std::span(bytes.data(), bytes.size())));
  file.commit();
}

void save_tensor(const std::filesystem::path& path, const std::string& name, const Tensor& value) {
  ::onnx::TensorProto proto;
  proto.set_name(name);
  for (auto d : value.shape()) proto.add_dims(d);
  const Tensor t = to(value, Device::cpu());
  std::string raw;
  if (t.dtype() == DType::i64) {
    proto.set_data_type(::onnx::TensorProto::INT64);
    const auto v = t.to_vector<std::int64_t>().get();
    raw.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(std::int64_t));
  } else if (t.dtype() == DType::bool_) {
    proto.set_data_type(::onnx::TensorProto::BOOL);
    for (bool b : t.to_vector<bool>().get()) raw.push_back(b ? 1 : 0);
  } else {
    proto.set_data_type(::onnx::TensorProto::FLOAT);
    raw = raw_bytes(t, ::onnx::TensorProto::FLOAT, name);
  }
  proto.set_raw_data(raw);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  KILN_CHECK(f.good() && proto.SerializeToOstream(&f), "onnx", "cannot write '" + path.string() + "'");
}

}  // namespace kiln::onnx
