// The safetensors header: what a file says about its tensors, parsed and checked from the raw
// bytes before a single tensor byte is touched. Files are untrusted: every length, offset and
// shape is bounds- and overflow-checked here, and every error is a kiln::Error that names the
// file and the tensor. This file needs nothing of the kiln runtime (only kiln::Error), so the
// libFuzzer target (tests/fuzz) compiles it alone.
//
// Layout: an 8-byte little-endian length N, N bytes of JSON
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}
// then the data; offsets count from the data's start, and the tensors cover it without holes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::io {

// The element types a safetensors file can declare, in the library's order: serialize sorts
// tensors by this order, descending (largest alignment first), then by name.
enum class FileDType : std::uint8_t {
  BOOL,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64
};

const char* file_dtype_name(FileDType t);  // "F32"
std::size_t file_dtype_size(FileDType t);
std::optional<FileDType> parse_file_dtype(std::string_view name);

// One tensor as the header declares it; offsets are relative to the start of the data.
struct TensorInfo {
  std::string name{};
  FileDType dtype = FileDType::F32;
  std::vector<std::int64_t> shape{};
  std::uint64_t begin = 0;
  std::uint64_t end = 0;

  std::uint64_t byte_size() const { return end - begin; }
  std::int64_t numel() const;
};

struct SafetensorsHeader {
  std::uint64_t data_start = 0;       // where the data begins in the file: 8 + N
  std::uint64_t data_size = 0;        // bytes of data after the header
  std::vector<TensorInfo> tensors{};  // ordered by data offset
  std::map<std::string, std::string> metadata{};
};

// The limits a header must respect. The header cap is the one the safetensors library uses;
// the rank cap keeps a hostile shape from costing memory (kiln's own tensors go up to 8 dims).
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
inline constexpr std::size_t kMaxFileRank = 64;

// Parses and validates the header of a whole file held in `file` (a memory mapping or a buffer):
// the length prefix, the JSON, each entry's fields, byte counts against shapes, and the layout
// of the data (inside the file, no overlaps, no holes). Throws kiln::Error(op, "<source>: ...").
SafetensorsHeader parse_safetensors(std::span<const std::byte> file, std::string_view source, const char* op);

// Shapes and layout only (the JSON already parsed): what parse_safetensors checks after reading
// the entries. `tensors` come back sorted by offset.
void validate_tensor_table(std::vector<TensorInfo>& tensors, std::uint64_t data_size, std::string_view source,
                           const char* op);

}  // namespace kiln::io
