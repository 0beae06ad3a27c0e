// Host-side element conversions. Each element is decoded into a wide type (double for floats,
// int64 for integers) and encoded again, so every pair of dtypes shares one decoder and one
// encoder; files are small next to what a model does with them, so this loop is not hot.
#include "kiln/io/dtype_conversion.h"

#include <cstdint>
#include <cstring>
#include <limits>

#include "kiln/ops/half.h"

namespace kiln::io {

namespace {

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

double decode_float(const std::byte* p, FileDType t) {
  switch (t) {
    case FileDType::F64: return load<double>(p);
    case FileDType::F32: return load<float>(p);
    case FileDType::F16: return f16_to_f32(load<std::uint16_t>(p));
    case FileDType::BF16: return bf16_to_f32(load<std::uint16_t>(p));
    default: return 0.0;  // not a float: convertible() keeps this unreachable
  }
}

// Narrowing goes through f32 (f64 -> f16 rounds twice; values a model holds are not near the
// ties where that differs).
void encode_float(std::byte* p, FileDType t, double v) {
  switch (t) {
    case FileDType::F64: store(p, v); break;
    case FileDType::F32: store(p, static_cast<float>(v)); break;
    case FileDType::F16: store(p, f16_bits(static_cast<float>(v))); break;
    case FileDType::BF16: store(p, bf16_bits(static_cast<float>(v))); break;
    default: break;
  }
}

// False when a U64 is above the i64 range.
bool decode_integer(const std::byte* p, FileDType t, std::int64_t& out) {
  switch (t) {
    case FileDType::I8: out = load<std::int8_t>(p); return true;
    case FileDType::U8: out = load<std::uint8_t>(p); return true;
    case FileDType::I16: out = load<std::int16_t>(p); return true;
    case FileDType::U16: out = load<std::uint16_t>(p); return true;
    case FileDType::I32: out = load<std::int32_t>(p); return true;
    case FileDType::U32: out = load<std::uint32_t>(p); return true;
    case FileDType::I64: out = load<std::int64_t>(p); return true;
    case FileDType::U64: {
      const auto v = load<std::uint64_t>(p);
      out = static_cast<std::int64_t>(v);
      return v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    }
    default: out = 0; return true;
  }
}

}  // namespace

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float magnitude;
  if (exp == 0) {
    magnitude = static_cast<float>(mant) * 0x1p-24f;  // subnormal (or zero): exact in f32
  } else if (exp == 31) {
    magnitude = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    std::uint32_t bits = ((exp + 112u) << 23) | (mant << 13);  // rebias 15 -> 127
    std::memcpy(&magnitude, &bits, sizeof magnitude);
  }
  std::uint32_t bits;
  std::memcpy(&bits, &magnitude, sizeof bits);
  bits |= sign;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

float bf16_to_f32(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

std::optional<DType> kiln_dtype(FileDType t) {
  switch (t) {
    case FileDType::F32: return DType::f32;
    case FileDType::F16: return DType::f16;
    case FileDType::BF16: return DType::bf16;
    case FileDType::I64: return DType::i64;
    case FileDType::BOOL: return DType::bool_;
    default: return std::nullopt;
  }
}

FileDType file_dtype(DType t) {
  switch (t) {
    case DType::f32: return FileDType::F32;
    case DType::f16: return FileDType::F16;
    case DType::bf16: return FileDType::BF16;
    case DType::i64: return FileDType::I64;
    case DType::bool_: return FileDType::BOOL;
  }
  return FileDType::F32;
}

bool is_file_float(FileDType t) {
  return t == FileDType::F64 || t == FileDType::F32 || t == FileDType::F16 || t == FileDType::BF16;
}

bool is_file_integer(FileDType t) {
  switch (t) {
    case FileDType::I8:
    case FileDType::U8:
    case FileDType::I16:
    case FileDType::U16:
    case FileDType::I32:
    case FileDType::U32:
    case FileDType::I64:
    case FileDType::U64: return true;
    default: return false;
  }
}

bool convertible(FileDType from, FileDType to) {
  if (from == to) return true;
  if (is_file_float(from) && is_file_float(to)) return true;
  return is_file_integer(from) && to == FileDType::I64;
}

std::optional<std::size_t> convert_elements(std::span<const std::byte> src, FileDType from, std::span<std::byte> dst,
                                            FileDType to) {
  const std::size_t in_size = file_dtype_size(from), out_size = file_dtype_size(to);
  const std::size_t n = src.size() / in_size;
  if (from == to && from != FileDType::BOOL) {
    if (n) std::memcpy(dst.data(), src.data(), n * in_size);
    return std::nullopt;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::byte* in = src.data() + i * in_size;
    std::byte* out = dst.data() + i * out_size;
    if (from == FileDType::BOOL) {
      *out = *in == std::byte{0} ? std::byte{0} : std::byte{1};
    } else if (is_file_float(from)) {
      encode_float(out, to, decode_float(in, from));
    } else {
      std::int64_t v = 0;
      if (!decode_integer(in, from, v)) return i;
      store(out, v);
    }
  }
  return std::nullopt;
}

}  // namespace kiln::io
