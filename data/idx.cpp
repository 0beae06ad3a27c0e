#include "kiln/data/idx.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "kiln/data/file_source.h"
#include "kiln/base/error.h"

namespace kiln::data {

namespace {

constexpr const char* kIdxOp = "read_idx";

// Deflate inflates a byte to at most 1032 bytes: a gzip file that the header says holds more
// than that is refused before anything is allocated for it.
constexpr std::uint64_t kMaxInflateRatio = 1032;

std::uint32_t big_endian_u32(const std::byte* p) {
  return (std::to_integer<std::uint32_t>(p[0]) << 24) | (std::to_integer<std::uint32_t>(p[1]) << 16) |
         (std::to_integer<std::uint32_t>(p[2]) << 8) | std::to_integer<std::uint32_t>(p[3]);
}

// One big-endian value; a double holds every type exactly.
double decode_value(const std::byte* p, IdxType type) {
  switch (type) {
    case IdxType::u8: return std::to_integer<std::uint8_t>(p[0]);
    case IdxType::i8: return static_cast<std::int8_t>(std::to_integer<std::uint8_t>(p[0]));
    case IdxType::i16:
      return static_cast<std::int16_t>((std::to_integer<std::uint16_t>(p[0]) << 8) |
                                       std::to_integer<std::uint16_t>(p[1]));
    case IdxType::i32: return static_cast<std::int32_t>(big_endian_u32(p));
    case IdxType::f32: return std::bit_cast<float>(big_endian_u32(p));
    case IdxType::f64: return std::bit_cast<double>((std::uint64_t{big_endian_u32(p)} << 32) | big_endian_u32(p + 4));
  }
  return 0;
}

std::string hex(std::uint32_t value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*X", digits, value);
  return buf;
}

std::string dims_str(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

bool known_type(std::uint8_t code) {
  switch (static_cast<IdxType>(code)) {
    case IdxType::u8:
    case IdxType::i8:
    case IdxType::i16:
    case IdxType::i32:
    case IdxType::f32:
    case IdxType::f64: return true;
  }
  return false;
}

// The header's fixed part: the type and the number of dimensions.
struct Magic {
  IdxType type;
  int rank;
};

Magic parse_magic(const std::string& file, const std::byte* p) {
  const std::uint32_t magic = big_endian_u32(p);
  KILN_CHECK(p[0] == std::byte{0} && p[1] == std::byte{0}, kIdxOp,
             file + ": wrong magic " + hex(magic, 8) +
                 " (an IDX file starts with two zero bytes, a type code and the number of dimensions)");
  const auto code = std::to_integer<std::uint8_t>(p[2]);
  KILN_CHECK(known_type(code), kIdxOp,
             file + ": wrong magic " + hex(magic, 8) + ": unknown type code " + hex(code, 2) +
                 " (known: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64)");
  const int rank = std::to_integer<int>(p[3]);
  KILN_CHECK(rank >= 1 && rank <= kMaxRank, kIdxOp,
             file + ": wrong magic " + hex(magic, 8) + ": " + std::to_string(rank) + " dimensions (kiln reads 1 to " +
                 std::to_string(kMaxRank) + ")");
  return {static_cast<IdxType>(code), rank};
}

// The dims from their big-endian u32s, and the data's length in bytes, checked for overflow.
std::uint64_t parse_dims(const std::string& file, const std::byte* p, int rank, IdxType type,
                         std::vector<std::int64_t>& dims) {
  std::uint64_t bytes = idx_type_size(type);
  bool overflow = false;
  for (int i = 0; i < rank; ++i) {
    dims.push_back(big_endian_u32(p + 4 * i));
    overflow |= __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(dims.back()), &bytes);
  }
  KILN_CHECK(!overflow && bytes <= (std::uint64_t{1} << 62), kIdxOp,
             file + ": dims " + dims_str(dims) + " of " + idx_type_name(type) +
                 " overflow: their data would exceed 2^62 bytes");
  return bytes;
}

std::string truncated(const std::string& file, const char* what, std::uint64_t expected, std::uint64_t got) {
  return file + ": truncated " + what + ": expected " + std::to_string(expected) + " bytes, got " + std::to_string(got);
}

}  // namespace

const char* idx_type_name(IdxType type) {
  switch (type) {
    case IdxType::u8: return "u8";
    case IdxType::i8: return "i8";
    case IdxType::i16: return "i16";
    case IdxType::i32: return "i32";
    case IdxType::f32: return "f32";
    case IdxType::f64: return "f64";
  }
  return "?";
}

std::size_t idx_type_size(IdxType type) {
  switch (type) {
    case IdxType::u8:
    case IdxType::i8: return 1;
    case IdxType::i16: return 2;
    case IdxType::i32:
    case IdxType::f32: return 4;
    case IdxType::f64: return 8;
  }
  return 1;
}

IdxFile::IdxFile(const std::filesystem::path& path) : path_(path) {
  const std::string file = path.string();
  if (detail::is_gzip_file(path, kIdxOp)) {
    detail::GzipReader reader(path, kIdxOp);
    std::vector<std::byte> header;
    if (reader.read_into(header, 4) < 4) throw Error(kIdxOp, truncated(file, "header", 4, header.size()));
    const Magic magic = parse_magic(file, header.data());
    const std::size_t dims_bytes = 4 * static_cast<std::size_t>(magic.rank);
    if (reader.read_into(header, dims_bytes) < dims_bytes)
      throw Error(kIdxOp, truncated(file, "header", 4 + dims_bytes, header.size()));
    type_ = magic.type;
    const std::uint64_t expected = parse_dims(file, header.data() + 4, magic.rank, type_, dims_);
    std::error_code error;
    const std::uint64_t compressed = std::filesystem::file_size(path, error);
    KILN_CHECK(!error, kIdxOp, file + ": cannot read the file's size: " + error.message());
    KILN_CHECK(expected <= kMaxInflateRatio * compressed, kIdxOp,
               file + ": dims " + dims_str(dims_) + " of " + idx_type_name(type_) + " need " +
                   std::to_string(expected) + " bytes, more than a gzip file of " + std::to_string(compressed) +
                   " bytes can hold");
    auto data = std::make_shared<std::vector<std::byte>>();
    const std::size_t got = reader.read_into(*data, expected);
    if (got < expected) throw Error(kIdxOp, truncated(file, "data", expected, got));
    KILN_CHECK(reader.at_end(), kIdxOp,
               file + ": the gzip data goes on after the " + std::to_string(expected) + " bytes that dims " +
                   dims_str(dims_) + " of " + idx_type_name(type_) + " take");
    data_ = std::span<const std::byte>(*data);
    storage_ = std::move(data);
  } else {
    auto mapped = std::make_shared<MappedFile>(path, kIdxOp);
    const std::span<const std::byte> bytes = mapped->bytes();
    if (bytes.size() < 4) throw Error(kIdxOp, truncated(file, "header", 4, bytes.size()));
    const Magic magic = parse_magic(file, bytes.data());
    const std::size_t header_size = 4 + 4 * static_cast<std::size_t>(magic.rank);
    if (bytes.size() < header_size) throw Error(kIdxOp, truncated(file, "header", header_size, bytes.size()));
    type_ = magic.type;
    const std::uint64_t expected = parse_dims(file, bytes.data() + 4, magic.rank, type_, dims_);
    const std::uint64_t got = bytes.size() - header_size;
    if (got < expected) throw Error(kIdxOp, truncated(file, "data", expected, got));
    KILN_CHECK(got == expected, kIdxOp,
               file + ": " + std::to_string(got - expected) + " extra bytes after the " + std::to_string(expected) +
                   " bytes that dims " + dims_str(dims_) + " of " + idx_type_name(type_) + " take");
    data_ = bytes.subspan(header_size);
    storage_ = std::move(mapped);
  }
  record_size_ = 1;
  for (std::size_t i = 1; i < dims_.size(); ++i) record_size_ *= dims_[i];
}

std::span<const std::byte> IdxFile::record_bytes(std::int64_t index, const char* op) const {
  KILN_CHECK(index >= 0 && index < records(), op,
             path_.string() + ": record " + std::to_string(index) + " is out of range (the file holds " +
                 std::to_string(records()) + ")");
  const std::size_t size = static_cast<std::size_t>(record_size_) * idx_type_size(type_);
  return data_.subspan(static_cast<std::size_t>(index) * size, size);
}

std::vector<float> IdxFile::record_floats(std::int64_t index) const {
  const std::byte* p = record_bytes(index, "IdxFile::record_floats").data();
  std::vector<float> out(static_cast<std::size_t>(record_size_));
  for (float& v : out) {
    v = static_cast<float>(decode_value(p, type_));
    p += idx_type_size(type_);
  }
  return out;
}

std::vector<std::int64_t> IdxFile::record_ints(std::int64_t index) const {
  KILN_CHECK(type_ != IdxType::f32 && type_ != IdxType::f64, "IdxFile::record_ints",
             path_.string() + ": holds " + idx_type_name(type_) + " values, not integers");
  const std::byte* p = record_bytes(index, "IdxFile::record_ints").data();
  std::vector<std::int64_t> out(static_cast<std::size_t>(record_size_));
  for (std::int64_t& v : out) {
    v = static_cast<std::int64_t>(decode_value(p, type_));
    p += idx_type_size(type_);
  }
  return out;
}

std::int64_t IdxFile::scalar_int(std::int64_t index) const {
  KILN_CHECK(record_size_ == 1, "IdxFile::scalar_int",
             path_.string() + ": records of shape " + record_shape().str() + " are not single values");
  return record_ints(index)[0];
}

}  // namespace kiln::data
