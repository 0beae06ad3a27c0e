// Implementation of the IR vocabulary: dtype names, shapes, broadcasting, errors.
#include "kiln/ops/dtype.h"
#include "kiln/base/error.h"
#include "kiln/ops/shape.h"

#include <algorithm>

namespace kiln {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::i64: return "i64";
    case DType::bool_: return "bool";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

Error::Error(std::string op, const std::string& message)
    : std::runtime_error(op + ": " + message), op_(std::move(op)) {}

Shape::Shape(std::initializer_list<std::int64_t> dims) {
  for (auto d : dims) push_back(d);
}
Shape::Shape(const std::vector<std::int64_t>& dims) {
  for (auto d : dims) push_back(d);
}

void Shape::push_back(std::int64_t d) {
  KILN_CHECK(rank_ < kMaxRank, "shape", "rank above " + std::to_string(kMaxRank) + " is not supported");
  dims_[rank_++] = d;
}

void Shape::insert(int pos, std::int64_t d) {
  KILN_CHECK(rank_ < kMaxRank, "shape", "rank above " + std::to_string(kMaxRank) + " is not supported");
  for (int i = rank_; i > pos; --i) dims_[i] = dims_[i - 1];
  dims_[pos] = d;
  ++rank_;
}

void Shape::erase(int pos) {
  for (int i = pos; i + 1 < rank_; ++i) dims_[i] = dims_[i + 1];
  --rank_;
}

void Shape::resize(int rank, std::int64_t fill) {
  KILN_CHECK(rank <= kMaxRank, "shape", "rank above " + std::to_string(kMaxRank) + " is not supported");
  for (int i = rank_; i < rank; ++i) dims_[i] = fill;
  rank_ = rank;
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

bool operator==(const Shape& a, const Shape& b) {
  return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
}

Shape contiguous_strides(const Shape& shape) {
  Shape s;
  s.resize(shape.rank());
  std::int64_t acc = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  Shape out;
  out.resize(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    KILN_CHECK(da == db || da == 1 || db == 1, op,
               "shapes " + a.str() + " and " + b.str() + " cannot be broadcast (dim " + std::to_string(i) +
                   ": " + std::to_string(da) + " vs " + std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int normalize_dim(const char* op, std::int64_t dim, int rank) {
  const int r = std::max(rank, 1);
  KILN_CHECK(dim >= -r && dim < r, op,
             "dim " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(rank));
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

}  // namespace kiln
