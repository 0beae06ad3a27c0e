// Conversions between the CPU dtypes, as PyTorch's .to(dtype) does them: f32 -> i64 truncates
// toward zero, and NaN or a value beyond i64's range gives i64's minimum (what x86's truncating
// conversion gives, and so PyTorch on this machine); anything -> bool is `!= 0` (NaN is true).
#include <cstring>
#include <limits>

#include "kiln/devices/cpu/elementwise_math.h"

namespace kiln::cpu {

namespace {

using i64 = std::int64_t;

template <class From, class To>
To convert(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != From{0};
  } else if constexpr (std::is_same_v<From, float> && std::is_same_v<To, i64>) {
    // Out-of-range conversion is undefined in C++: test the range first (NaN fails both tests).
    return x >= -9223372036854775808.0f && x < 9223372036854775808.0f ? static_cast<i64>(x)
                                                                      : std::numeric_limits<i64>::min();
  } else {
    return static_cast<To>(x);
  }
}

template <class From, class To>
void cast_loop(const void* xv, void* yv, std::int64_t n) {
  const From* x = static_cast<const From*>(xv);
  To* y = static_cast<To*>(yv);
  for (std::int64_t i = 0; i < n; ++i) y[i] = convert<From, To>(x[i]);
}

template <std::size_t kSize>
void copy_loop(const void* x, void* y, std::int64_t n) {
  if (x != y && n > 0) std::memmove(y, x, static_cast<std::size_t>(n) * kSize);
}

template <class From>
CastFn cast_from(DType to) {
  switch (to) {
    case DType::f32: return std::is_same_v<From, float> ? copy_loop<4> : cast_loop<From, float>;
    case DType::i64: return std::is_same_v<From, i64> ? copy_loop<8> : cast_loop<From, i64>;
    case DType::bool_: return std::is_same_v<From, bool> ? copy_loop<1> : cast_loop<From, bool>;
    default: return nullptr;
  }
}

}  // namespace

CastFn cast_fn(DType from, DType to) {
  switch (from) {
    case DType::f32: return cast_from<float>(to);
    case DType::i64: return cast_from<i64>(to);
    case DType::bool_: return cast_from<bool>(to);
    default: return nullptr;
  }
}

}  // namespace kiln::cpu
