// Reading safetensors files: SafeTensorsFile opens one (memory-mapped, header validated) and
// gives its tensors one at a time, like safetensors' safe_open; load_file reads them all, like
// safetensors.torch.load_file.
//
//   io::SafeTensorsFile file("model.safetensors");
//   for (const io::TensorInfo& t : file.tensors()) std::cout << t.name << "\n";
//   Tensor w = file.tensor("fc.weight");
//   auto all = io::load_file("model.safetensors", {.float_dtype = DType::f32});  // f16 -> f32
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/io/safetensors_header.h"
#include "kiln/nn/module.h"

namespace kiln::io {

struct TensorLoadOptions {
  Device device = Device::cpu();
  // Floating tensors (F64, F32, F16, BF16) become this dtype when set; unset, they keep their
  // own (F64 then has no kiln dtype, and f16/bf16 need a device that holds them).
  std::optional<DType> float_dtype{};
  // Integer tensors kiln has no dtype for (I32, I16, I8, U8, U16, U32, U64) become i64.
  bool widen_integers = false;
};

class SafeTensorsFile {
 public:
  // Maps the file and validates its whole header; throws kiln::Error(op, "<path>: ...").
  explicit SafeTensorsFile(const std::filesystem::path& path, const char* op = "SafeTensorsFile");

  const std::filesystem::path& path() const;
  // Every tensor the header declares, in the order of their data.
  const std::vector<TensorInfo>& tensors() const;
  // The tensor called `name`, or null.
  const TensorInfo* find(std::string_view name) const;
  // The header's "__metadata__" (string to string).
  const std::map<std::string, std::string>& metadata() const;
  // The tensor's bytes as stored, a view into the mapping (valid while this object lives).
  std::span<const std::byte> bytes(const TensorInfo& t) const;

  // The tensor called `name` on options.device; throws naming the file and the tensor when it
  // is absent or its dtype has no kiln counterpart without the conversion options.
  Tensor tensor(std::string_view name, const TensorLoadOptions& options = {}) const;
  // `t` as exactly `dtype` on `device`; stored in another dtype, it is converted when
  // `convert` is true (floats to floats, integers to i64) and an error otherwise.
  Tensor tensor_as(const TensorInfo& t, DType dtype, Device device, bool convert, const char* op) const;
  // The kiln dtype `t` loads as under `options`, or nothing when it has none.
  static std::optional<DType> load_dtype(const TensorInfo& t, const TensorLoadOptions& options);

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// Every tensor of the file, in the order of their data.
std::vector<nn::NamedTensor> load_file(const std::filesystem::path& path, const TensorLoadOptions& options = {});

}  // namespace kiln::io
