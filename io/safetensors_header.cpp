// The length prefix and the data layout of a safetensors file; the JSON itself is read in
// io/header_json.cpp. All arithmetic on numbers from the file is checked for overflow.
#include "kiln/io/safetensors_header.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "kiln/io/header_json.h"
#include "kiln/base/error.h"

namespace kiln::io {

namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so is kiln's host");

struct DTypeEntry {
  FileDType dtype;
  const char* name;
  std::size_t size;
};

constexpr std::array<DTypeEntry, 15> kDTypes{{
    {FileDType::BOOL, "BOOL", 1},
    {FileDType::U8, "U8", 1},
    {FileDType::I8, "I8", 1},
    {FileDType::F8_E5M2, "F8_E5M2", 1},
    {FileDType::F8_E4M3, "F8_E4M3", 1},
    {FileDType::I16, "I16", 2},
    {FileDType::U16, "U16", 2},
    {FileDType::F16, "F16", 2},
    {FileDType::BF16, "BF16", 2},
    {FileDType::I32, "I32", 4},
    {FileDType::U32, "U32", 4},
    {FileDType::F32, "F32", 4},
    {FileDType::F64, "F64", 8},
    {FileDType::I64, "I64", 8},
    {FileDType::U64, "U64", 8},
}};

std::string offsets_str(const TensorInfo& t) {
  return "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
}

std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The tensor's byte count from its shape, or nothing when it does not fit in 63 bits. Zero
// dims are skipped in the product so that [0, 2^40, 2^40] is refused too: kiln's own shape
// arithmetic (strides, broadcasting) multiplies dims in any order.
std::optional<std::uint64_t> checked_bytes(const TensorInfo& t) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t product = file_dtype_size(t.dtype);
  bool has_zero = false;
  for (const std::int64_t d : t.shape) {
    if (d == 0) {
      has_zero = true;
      continue;
    }
    if (__builtin_mul_overflow(product, static_cast<std::uint64_t>(d), &product) || product > kMax) return std::nullopt;
  }
  return has_zero ? 0 : product;
}

}  // namespace

const char* file_dtype_name(FileDType t) { return kDTypes[static_cast<std::size_t>(t)].name; }
std::size_t file_dtype_size(FileDType t) { return kDTypes[static_cast<std::size_t>(t)].size; }

std::optional<FileDType> parse_file_dtype(std::string_view name) {
  for (const DTypeEntry& e : kDTypes)
    if (name == e.name) return e.dtype;
  return std::nullopt;
}

std::int64_t TensorInfo::numel() const {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;  // validated: the product fits
  return n;
}

void validate_tensor_table(std::vector<TensorInfo>& tensors, std::uint64_t data_size, std::string_view source,
                           const char* op) {
  const std::string file(source);
  for (const TensorInfo& t : tensors) {
    const std::string where = file + ": tensor " + detail::in_quotes(t.name) + ": ";
    const auto bytes = checked_bytes(t);
    KILN_CHECK(bytes.has_value(), op,
               where + "shape " + shape_str(t.shape) + " of " + file_dtype_name(t.dtype) +
                   " overflows: its element count times the element size does not fit in 63 bits");
    KILN_CHECK(t.begin <= t.end, op, where + "data_offsets " + offsets_str(t) + " run backwards (begin > end)");
    KILN_CHECK(t.end - t.begin == *bytes, op,
               where + "shape " + shape_str(t.shape) + " of " + file_dtype_name(t.dtype) + " needs " +
                   std::to_string(*bytes) + " bytes, but data_offsets " + offsets_str(t) + " span " +
                   std::to_string(t.end - t.begin));
    KILN_CHECK(t.end <= data_size, op,
               where + "data_offsets " + offsets_str(t) + " run past the end of the data (" +
                   std::to_string(data_size) + " bytes after the header; is the file truncated?)");
  }
  std::stable_sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // Like the safetensors library: the tensors tile the data exactly, so no byte is shared by
  // two tensors and none is hidden between them.
  std::uint64_t covered = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& t : tensors) {
    KILN_CHECK(t.begin >= covered, op,
               file + ": tensor " + detail::in_quotes(t.name) + " (data_offsets " + offsets_str(t) +
                   ") overlaps tensor " + detail::in_quotes(previous ? previous->name : std::string()) +
                   " (data_offsets " + (previous ? offsets_str(*previous) : std::string("?")) + ")");
    KILN_CHECK(t.begin == covered, op,
               file + ": tensor " + detail::in_quotes(t.name) + ": a gap of " + std::to_string(t.begin - covered) +
                   " bytes before its data_offsets " + offsets_str(t) +
                   " (the tensors must cover the data without holes)");
    covered = t.end;
    previous = &t;
  }
  KILN_CHECK(
      covered == data_size, op,
      file + ": " + std::to_string(data_size - covered) + " bytes after the last tensor's data" +
          (previous ? " (" + detail::in_quotes(previous->name) + " ends at " + std::to_string(covered) + ")" : "") +
          " belong to no tensor (the tensors must cover the data without holes)");
}

SafetensorsHeader parse_safetensors(std::span<const std::byte> file, std::string_view source, const char* op) {
  const std::string name(source);
  KILN_CHECK(file.size() >= 8, op,
             name + ": the file is " + std::to_string(file.size()) +
                 " bytes, too short for the 8-byte header length a safetensors file starts with");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(file[static_cast<std::size_t>(i)]);
  KILN_CHECK(n <= kMaxHeaderBytes, op,
             name + ": the header length " + std::to_string(n) + " exceeds the limit of " +
                 std::to_string(kMaxHeaderBytes) + " bytes (not a safetensors file, or a corrupt one)");
  KILN_CHECK(n <= file.size() - 8, op,
             name + ": the header length " + std::to_string(n) + " runs past the end of the file (" +
                 std::to_string(file.size()) + " bytes; is the file truncated?)");

  const auto* text = reinterpret_cast<const char*>(file.data() + 8);
  // nlohmann's lexer takes a NUL byte for the end of its input; JSON has no place for one.
  const void* nul = std::memchr(text, 0, n);
  KILN_CHECK(nul == nullptr, op,
             name + ": the header is not valid JSON: a NUL byte at byte " +
                 std::to_string(static_cast<const char*>(nul) - text) + " of the header");
  detail::HeaderJson json = detail::parse_header_json(std::string_view(text, n), source, op);

  SafetensorsHeader header;
  header.data_start = 8 + n;
  header.data_size = file.size() - header.data_start;
  validate_tensor_table(json.tensors, header.data_size, source, op);
  header.tensors = std::move(json.tensors);
  header.metadata = std::move(json.metadata);
  return header;
}

}  // namespace kiln::io
