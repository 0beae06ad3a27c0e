// Shape: the dims of a tensor, stored inline (no heap allocation) so that building an op message
// stays cheap. kiln supports up to kMaxRank dims.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace kiln {

inline constexpr int kMaxRank = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(const std::vector<std::int64_t>& dims);
  template <class It> Shape(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }

  int rank() const { return rank_; }
  bool empty() const { return rank_ == 0; }
  std::size_t size() const { return rank_; }
  std::int64_t operator[](int i) const { return dims_[i]; }
  std::int64_t& operator[](int i) { return dims_[i]; }
  const std::int64_t* begin() const { return dims_.data(); }
  const std::int64_t* end() const { return dims_.data() + rank_; }
  std::int64_t* begin() { return dims_.data(); }
  std::int64_t* end() { return dims_.data() + rank_; }
  std::int64_t back() const { return dims_[rank_ - 1]; }
  void push_back(std::int64_t d);
  void insert(int pos, std::int64_t d);
  void erase(int pos);
  void resize(int rank, std::int64_t fill = 1);

  std::int64_t numel() const;
  std::vector<std::int64_t> to_vector() const { return {begin(), end()}; }
  std::string str() const;  // "[2, 3]"

  friend bool operator==(const Shape& a, const Shape& b);
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::array<std::int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Row-major (contiguous) strides, in elements.
Shape contiguous_strides(const Shape& shape);

// NumPy broadcasting of two shapes; throws kiln::Error naming `op` when they do not broadcast.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

// Wraps a possibly negative dim into [0, rank); throws naming `op` when out of range.
int normalize_dim(const char* op, std::int64_t dim, int rank);

}  // namespace kiln
