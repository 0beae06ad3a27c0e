// The element types a tensor can hold. f16/bf16 live on Vulkan devices with 16-bit storage (every
// op takes them there); the CPU device computes in f32, i64 and bool.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kiln {

enum class DType : std::uint8_t { f32, i64, bool_, f16, bf16 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::i64: return 8;
    case DType::bool_: return 1;
    case DType::f16:
    case DType::bf16: return 2;
  }
  return 0;
}

const char* dtype_name(DType t);

constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
constexpr bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }  // the 16-bit floats

template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::f32; };
template <> struct DTypeOf<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::bool_; };
template <class T> constexpr DType dtype_of = DTypeOf<T>::value;

}  // namespace kiln
