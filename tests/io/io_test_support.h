// What the io suites share: where the reference files are, a scratch directory per test, the
// kiln twin of the PyTorch model in tests/data/gen_io_torch.py, and reading values back.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kiln/io/io.h"
#include "kiln/nn/nn.h"
#include "support/expect_error.h"
#include "support/reference.h"
#include "support/scratch_dir.h"
#include "support/test_files.h"

namespace kiln::test {

// tests/data/io/<name>, written by tests/data/gen_io_*.py.
inline std::filesystem::path io_data(const std::string& name) { return reference_path("io/" + name); }

inline Json load_io_json(const std::string& name) { return load_reference_json("io/" + name, "tests/data/gen_io_*.py"); }

// A safetensors file from raw entries, laid out in the order given (for dtypes kiln cannot
// write, such as I32 or U64).
struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> bytes;
  // The byte count the header declares, when the test writes the bytes itself (a sparse file).
  std::optional<std::uint64_t> declared{};
};

inline void write_raw_safetensors(const std::filesystem::path& path, const std::vector<RawTensor>& tensors,
                                  const Json& metadata = nullptr) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.is_null()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const RawTensor& t : tensors) {
    const std::uint64_t size = t.declared.value_or(t.bytes.size());
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<std::byte> out = le64_bytes(text.size());
  for (char c : text) out.push_back(static_cast<std::byte>(c));
  for (const RawTensor& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  write_bytes(path, out);
}

// The kiln twin of gen_io_torch.py's Net: the same fields in the same order.
struct TorchNet : nn::Module {
  nn::Conv2d conv{2, 3, {3}};
  nn::BatchNorm1d bn{4};
  nn::Linear fc{5, 4};
  nn::Sequential head{nn::Linear(4, 2)};
  KILN_MODULE(TorchNet, conv, bn, fc, head)
};

// Reference numbers: JSON numbers, or "nan" / "inf" / "-inf".
inline double json_number(const Json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    return s == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  }
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  return v.get<double>();
}

inline std::vector<double> json_numbers(const Json& values) {
  std::vector<double> out;
  for (const Json& v : values) out.push_back(json_number(v));
  return out;
}

inline Shape json_dims(const Json& shape) { return Shape(shape.get<std::vector<std::int64_t>>()); }

// Every value of an f32, i64 or bool tensor as a double (i64 beyond 2^53 compare through i64).
inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out;
  if (t.dtype() == DType::f32) {
    for (float v : t.to_vector<float>().get()) out.push_back(v);
  } else if (t.dtype() == DType::i64) {
    for (std::int64_t v : t.to_vector<std::int64_t>().get()) out.push_back(static_cast<double>(v));
  } else {
    for (bool v : t.to_vector<bool>().get()) out.push_back(v ? 1.0 : 0.0);
  }
  return out;
}

inline const Tensor* find_named(const std::vector<nn::NamedTensor>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return &t.tensor;
  return nullptr;
}

}  // namespace kiln::test
