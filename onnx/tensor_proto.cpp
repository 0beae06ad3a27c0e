#include "kiln/onnx/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "kiln/onnx/onnx.h"

namespace kiln::onnx::detail {
namespace {

using P = ::onnx::TensorProto;

// Bytes per element of the raw little-endian form; 0 for types kiln does not load.
std::size_t element_size(int type) {
  switch (type) {
    case P::FLOAT:
    case P::INT32:
    case P::UINT32: return 4;
    case P::DOUBLE:
    case P::INT64:
    case P::UINT64: return 8;
    case P::INT16:
    case P::UINT16:
    case P::FLOAT16:
    case P::BFLOAT16: return 2;
    case P::INT8:
    case P::UINT8:
    case P::BOOL: return 1;
    default: return 0;
  }
}

template <class T>
T load_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Decodes `n` elements of raw little-endian bytes into h.
void decode_raw(HostTensor& h, int type, const char* p, std::size_t n) {
  const std::size_t es = element_size(type);
  const bool integer = h.is_integer();
  if (integer)
    h.ints.resize(n);
  else
    h.floats.resize(n);
  for (std::size_t k = 0; k < n; ++k, p += es) {
    switch (type) {
      case P::FLOAT: h.floats[k] = load_le<float>(p); break;
      case P::DOUBLE: h.floats[k] = float(load_le<double>(p)); break;
      case P::FLOAT16: h.floats[k] = half_to_float(load_le<std::uint16_t>(p)); break;
      case P::BFLOAT16: h.floats[k] = bfloat16_to_float(load_le<std::uint16_t>(p)); break;
      case P::INT64: h.ints[k] = load_le<std::int64_t>(p); break;
      case P::UINT64: h.ints[k] = std::int64_t(load_le<std::uint64_t>(p)); break;
      case P::INT32: h.ints[k] = load_le<std::int32_t>(p); break;
      case P::UINT32: h.ints[k] = load_le<std::uint32_t>(p); break;
      case P::INT16: h.ints[k] = load_le<std::int16_t>(p); break;
      case P::UINT16: h.ints[k] = load_le<std::uint16_t>(p); break;
      case P::INT8: h.ints[k] = load_le<std::int8_t>(p); break;
      case P::UINT8: h.ints[k] = load_le<std::uint8_t>(p); break;
      case P::BOOL: h.ints[k] = *p != 0; break;
      default: break;
    }
  }
}

std::string read_external(const P& proto, const std::filesystem::path& base_dir, std::size_t bytes,
                          const std::string& what) {
  std::string location;
  std::uint64_t offset = 0;
  std::int64_t length = -1;
  for (const auto& kv : proto.external_data()) {
    try {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoull(kv.value());
      else if (kv.key() == "length")
        length = std::stoll(kv.value());
    } catch (const std::exception&) {
      throw Error("onnx", what + ": external data '" + kv.key() + "' is not a number: '" + kv.value() + "'");
    }
  }
  KILN_CHECK(!location.empty(), "onnx", what + ": external data without a location");
  const std::filesystem::path rel(location);
  KILN_CHECK(rel.is_relative() && location.find("..") == std::string::npos, "onnx",
             what + ": external data location '" + location + "' must be a relative path inside the model's folder");
  KILN_CHECK(length < 0 || std::size_t(length) == bytes, "onnx",
             what + ": external data length " + std::to_string(length) + " but the tensor needs " +
                 std::to_string(bytes) + " bytes");
  const auto path = base_dir / rel;
  std::ifstream f(path, std::ios::binary);
  KILN_CHECK(f.good(), "onnx", what + ": cannot open external data file '" + path.string() + "'");
  f.seekg(0, std::ios::end);
  const auto size = std::uint64_t(f.tellg());
  KILN_CHECK(offset <= size && bytes <= size - offset, "onnx",
             what + ": external data file '" + path.string() + "' holds " + std::to_string(size) +
                 " bytes, the tensor needs " + std::to_string(bytes) + " at offset " + std::to_string(offset));
  std::string data(bytes, '\0');
  f.seekg(std::streamoff(offset));
  f.read(data.data(), std::streamsize(bytes));
  KILN_CHECK(f.good(), "onnx", what + ": reading external data file '" + path.string() + "' failed");
  return data;
}

template <class Field>
void check_count(const Field& field, std::size_t n, const char* name, const std::string& what) {
  KILN_CHECK(
      std::size_t(field.size()) == n, "onnx",
      what + ": " + name + " holds " + std::to_string(field.size()) + " values, the shape needs " + std::to_string(n));
}

}  // namespace

const char* onnx_type_name(int t) {
  switch (t) {
    case P::FLOAT: return "float";
    case P::UINT8: return "uint8";
    case P::INT8: return "int8";
    case P::UINT16: return "uint16";
    case P::INT16: return "int16";
    case P::INT32: return "int32";
    case P::INT64: return "int64";
    case P::STRING: return "string";
    case P::BOOL: return "bool";
    case P::FLOAT16: return "float16";
    case P::DOUBLE: return "double";
    case P::UINT32: return "uint32";
    case P::UINT64: return "uint64";
    case P::COMPLEX64: return "complex64";
    case P::COMPLEX128: return "complex128";
    case P::BFLOAT16: return "bfloat16";
    default: return "undefined";
  }
}

DType kiln_dtype(int t, const std::string& what) {
  switch (t) {
    case P::FLOAT:
    case P::DOUBLE: return DType::f32;
    case P::FLOAT16: return DType::f16;
    case P::BFLOAT16: return DType::bf16;
    case P::BOOL: return DType::bool_;
    case P::INT64:
    case P::INT32:
    case P::INT16:
    case P::INT8:
    case P::UINT64:
    case P::UINT32:
    case P::UINT16:
    case P::UINT8: return DType::i64;
    default:
      throw UnsupportedError(
          "", what + ": element type " + onnx_type_name(t) + " (" + std::to_string(t) + ") is not supported",
          std::string(onnx_type_name(t)) + " tensors");
  }
}

HostTensor read_tensor_proto(const P& proto, const std::filesystem::path& base_dir, const std::string& what) {
  const int type = proto.data_type();
  HostTensor h;
  h.dtype = kiln_dtype(type, what);
  // Element counts stay far from overflow: 2^40 elements is beyond any file kiln could load.
  constexpr std::int64_t kMaxElements = std::int64_t(1) << 40;
  std::int64_t n = 1;
  for (const auto d : proto.dims()) {
    KILN_CHECK(d >= 0 && (d == 0 || n <= kMaxElements / d), "onnx",
               what + ": bad dims (a dim of " + std::to_string(d) + ", or more than 2^40 elements)");
    h.shape.push_back(d);
    n *= d;
  }
  const auto count = std::size_t(n);
  const std::size_t bytes = count * element_size(type);
  if (proto.data_location() == P::EXTERNAL) {
    const std::string data = read_external(proto, base_dir, bytes, what);
    decode_raw(h, type, data.data(), count);
    return h;
  }
  if (proto.has_raw_data()) {
    KILN_CHECK(proto.raw_data().size() == bytes, "onnx",
               what + ": raw_data holds " + std::to_string(proto.raw_data().size()) + " bytes, shape " +
                   shape_str(h.shape) + " of " + onnx_type_name(type) + " needs " + std::to_string(bytes));
    decode_raw(h, type, proto.raw_data().data(), count);
    return h;
  }
  switch (type) {
    case P::FLOAT:
      check_count(proto.float_data(), count, "float_data", what);
      h.floats.assign(proto.float_data().begin(), proto.float_data().end());
      break;
    case P::DOUBLE:
      check_count(proto.double_data(), count, "double_data", what);
      h.floats.assign(proto.double_data().begin(), proto.double_data().end());
      break;
    case P::INT64:
      check_count(proto.int64_data(), count, "int64_data", what);
      h.ints.assign(proto.int64_data().begin(), proto.int64_data().end());
      break;
    case P::UINT32:
    case P::UINT64:
      check_count(proto.uint64_data(), count, "uint64_data", what);
      for (auto v : proto.uint64_data()) h.ints.push_back(std::int64_t(v));
      break;
    case P::FLOAT16:
    case P::BFLOAT16:
      check_count(proto.int32_data(), count, "int32_data", what);
      for (auto v : proto.int32_data()) {
        const auto bits = std::uint16_t(v);
        h.floats.push_back(type == P::FLOAT16 ? half_to_float(bits) : bfloat16_to_float(bits));
      }
      break;
    default:  // int32, int16, int8, uint16, uint8, bool: int32_data
      check_count(proto.int32_data(), count, "int32_data", what);
      for (auto v : proto.int32_data()) h.ints.push_back(type == P::BOOL ? (v != 0) : std::int64_t(v));
      break;
  }
  return h;
}

}  // namespace kiln::onnx::detail
