#include "kiln/engine/tensor.h"

#include <iomanip>
#include <ostream>
#include <sstream>

#include "kiln/engine/submit.h"

namespace kiln {

namespace {
const detail::TensorState& checked(const std::shared_ptr<detail::TensorState>& s) {
  KILN_CHECK(s != nullptr, "tensor", "the tensor is undefined (default-constructed or moved from)");
  return *s;
}

template <class T> void format_values(std::ostream& os, const std::vector<T>& v, const Shape& shape) {
  // Nested brackets per dim, like PyTorch; long tensors are elided in the middle.
  const std::int64_t n = static_cast<std::int64_t>(v.size());
  const Shape strides = contiguous_strides(shape);
  for (std::int64_t i = 0; i < n; ++i) {
    if (n > 64 && i == 32) {
      os << "..., ";
      i = n - 32;
    }
    for (int d = 0; d < shape.rank(); ++d)
      if (i % (strides[d] * shape[d]) == 0) os << '[';
    if constexpr (std::is_same_v<T, bool>) os << (v[i] ? "true" : "false");
    else os << v[i];
    int closed = 0;
    for (int d = shape.rank() - 1; d >= 0; --d) {
      if ((i + 1) % (strides[d] * shape[d]) == 0) {
        os << ']';
        ++closed;
      }
    }
    if (i + 1 < n) os << (closed ? ",\n       " : ", ");
  }
  if (shape.rank() == 0 && n == 1) return;
  if (n == 0) os << "[]";
}
}  // namespace

const Shape& Tensor::shape() const { return checked(state_).shape; }
DType Tensor::dtype() const { return checked(state_).dtype; }
Device Tensor::device() const { return checked(state_).device; }
EntityId Tensor::id() const { return checked(state_).id; }

std::int64_t Tensor::size(std::int64_t dim) const {
  const Shape& s = shape();
  return s[normalize_dim("size", dim, s.rank())];
}

std::string Tensor::str() const {
  std::ostringstream os;
  os << "tensor(";
  switch (dtype()) {
    case DType::f32: format_values(os, to_vector<float>().get(), shape()); break;
    case DType::i64: format_values(os, to_vector<std::int64_t>().get(), shape()); break;
    case DType::bool_: format_values(os, to_vector<bool>().get(), shape()); break;
    default: os << "...";
  }
  os << ", shape=" << shape().str() << ", dtype=" << dtype_name(dtype()) << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace kiln
