// SmallVector: a vector that keeps its first N elements inline and goes to the heap only past
// them. An op message lists its input and output tensors in two of these: almost every op has
// one or two of each, and with std::vector each message cost two heap allocations on the
// submitting thread and two frees on the scheduler's (about a fifth of small_ops' time).
// Only for trivially copyable elements, which it moves with memcpy.
#pragma once
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <algorithm>
#include <new>
#include <type_traits>
#include <utility>

namespace kiln {

template <class T, std::size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector copies its elements with memcpy");
  static_assert(N > 0);

 public:
  using value_type = T;
  using size_type = std::size_t;
  using iterator = T*;
  using const_iterator = const T*;
  using reference = T&;
  using const_reference = const T&;

  SmallVector() = default;
  SmallVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  SmallVector(It first, It last) {
    assign(first, last);
  }
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { take(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t capacity() const { return capacity_; }

  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void reserve(std::size_t n) {
    if (n > capacity_) grow_to(n);
  }
  void clear() { size_ = 0; }
  void push_back(const T& value) {
    if (size_ == capacity_) {
      const T copy = value;  // `value` may live in this vector
      grow_to(capacity_ * 2);
      data_[size_++] = copy;
    } else {
      data_[size_++] = value;
    }
  }
  template <class... Args> T& emplace_back(Args&&... args) {
    push_back(T{std::forward<Args>(args)...});
    return back();
  }
  void pop_back() { --size_; }
  void resize(std::size_t n, const T& fill = T{}) {
    const T value = fill;  // `fill` may live in this vector
    reserve(n);
    for (std::size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  void assign(It first, It last) {
    clear();
    insert(end(), first, last);
  }
  void assign(std::size_t n, const T& value) {
    const T copy = value;  // `value` may live in this vector, which clear() empties
    clear();
    resize(n, copy);
  }
  T* insert(const T* pos, const T& value) { return insert(pos, &value, &value + 1); }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  T* insert(const T* pos, It first, It last) {
    const std::size_t at = static_cast<std::size_t>(pos - data_);
    const auto n = static_cast<std::size_t>(std::distance(first, last));
    if (n == 0) return data_ + at;
    if (size_ + n > capacity_) {
      // Copy the new elements out first: they may live in this vector.
      SmallVector<T, 1> staged;
      staged.reserve(n);
      for (; first != last; ++first) staged.push_back(*first);
      grow_to(std::max(size_ + n, capacity_ * 2));
      return insert(data_ + at, staged.begin(), staged.end());
    }
    std::memmove(static_cast<void*>(data_ + at + n), data_ + at, (size_ - at) * sizeof(T));
    for (std::size_t i = 0; first != last; ++first, ++i) data_[at + i] = *first;
    size_ += n;
    return data_ + at;
  }
  T* erase(const T* pos) {
    const std::size_t at = static_cast<std::size_t>(pos - data_);
    std::memmove(static_cast<void*>(data_ + at), data_ + at + 1, (size_ - at - 1) * sizeof(T));
    --size_;
    return data_ + at;
  }

 private:
  T* inline_data() { return std::launder(reinterpret_cast<T*>(inline_)); }
  bool on_heap() const { return data_ != reinterpret_cast<const T*>(inline_); }

  void grow_to(std::size_t n) {
    T* bigger = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{alignof(T)}));
    std::memcpy(static_cast<void*>(bigger), data_, size_ * sizeof(T));
    release();
    data_ = bigger;
    capacity_ = n;
  }
  void release() {
    if (on_heap()) ::operator delete(data_, std::align_val_t{alignof(T)});
    data_ = inline_data();
    capacity_ = N;
  }
  // Takes o's elements, leaving it empty (inline).
  void take(SmallVector& o) {
    if (o.on_heap()) {
      data_ = o.data_;
      capacity_ = o.capacity_;
      o.data_ = o.inline_data();
      o.capacity_ = N;
    } else {
      std::memcpy(static_cast<void*>(data_), o.data_, o.size_ * sizeof(T));
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  alignas(T) std::byte inline_[N * sizeof(T)];
  T* data_ = inline_data();
  std::size_t size_ = 0;
  std::size_t capacity_ = N;
};

template <class T, std::size_t N> bool operator==(const SmallVector<T, N>& a, const SmallVector<T, N>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

}  // namespace kiln
