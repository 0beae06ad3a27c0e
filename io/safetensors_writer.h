// Writing safetensors files the way the safetensors library does, so that its readers (and
// PyTorch through them) load what kiln writes: the header's JSON padded with spaces to a multiple
// of 8 bytes, tensors laid out back to back sorted by dtype (largest alignment first) then by
// name. Every write goes through a temporary file renamed into place (io/atomic_file.h).
//
//   io::save_file({{"embedding", emb}, {"scale", s}}, "tensors.safetensors");
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::io {

struct SaveOptions {
  // The header's "__metadata__" (string to string); save_model adds "format": "pt", which
  // Hugging Face's loaders look for, unless this sets "format".
  std::map<std::string, std::string> metadata{};
  // Floating tensors are stored as this dtype when set (f16 or bf16 halve the file).
  std::optional<DType> float_dtype{};
  // Put in front of every tensor name ("backbone.").
  std::string prefix{};
};

// Writes `tensors` (names unique, tensors defined) to `path`. Waits for their values.
void save_file(const std::vector<nn::NamedTensor>& tensors, const std::filesystem::path& path,
               const SaveOptions& options = {});

namespace detail {
// save_file with the name of the public call for errors.
void write_safetensors(const std::vector<nn::NamedTensor>& tensors, const std::map<std::string, std::string>& metadata,
                       std::optional<DType> float_dtype, const std::filesystem::path& path, const char* op);
}  // namespace detail

}  // namespace kiln::io
