// Tensor: an entity handle (id, shape, dtype, device). It holds no data: every op on it becomes
// a message on its device's stream and returns new handles at once. Copying a Tensor shares the
// entity; moving hands it over — an op given the last handle (std::move(x)) may write its result
// into x's buffer. Reading values returns a Future.
#pragma once
#include <cstring>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "kiln/engine/device.h"
#include "kiln/engine/future.h"
#include "kiln/ops/dtype.h"
#include "kiln/base/error.h"
#include "kiln/ops/ir.h"
#include "kiln/ops/shape.h"

namespace kiln {

namespace detail {
struct TensorState;
}

struct TensorOptions {
  DType dtype = DType::f32;
  Device device = Device::cpu();
};

class Tensor {
 public:
  Tensor() = default;

  bool defined() const { return state_ != nullptr; }
  const Shape& shape() const;
  DType dtype() const;
  Device device() const;
  EntityId id() const;
  int rank() const { return shape().rank(); }
  std::int64_t numel() const { return shape().numel(); }
  std::int64_t size(std::int64_t dim) const;

  // Asynchronous reads: the future completes when every op this tensor depends on has run.
  template <class T> Future<std::vector<T>> to_vector() const;
  template <class T> Future<T> item() const;
  // Waits and formats the values ("tensor([1, 2], dtype=f32)").
  std::string str() const;

  // Internal: the engine builds handles and messages through these.
  explicit Tensor(std::shared_ptr<detail::TensorState> s) : state_(std::move(s)) {}
  const std::shared_ptr<detail::TensorState>& state() const { return state_; }

 private:
  std::shared_ptr<detail::TensorState> state_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

namespace detail {

// Submits a read of `t`; `completion` receives its bytes on the scheduler's thread. Returns how
// a thread waiting for it can help.
FutureHelper submit_read(const Tensor& t, const char* op, DType expected, std::shared_ptr<Completion> completion);

template <class T> class VectorCompletion final : public Completion {
 public:
  Promise<std::vector<T>> promise;
  std::byte* destination(std::size_t bytes) override {
    if constexpr (std::is_same_v<T, bool>) {
      return nullptr;  // bools are converted from bytes (complete)
    } else {
      value_.resize(bytes / sizeof(T));
      return value_.empty() ? nullptr : reinterpret_cast<std::byte*>(value_.data());
    }
  }
  void complete_in_place() override { promise.set_value(std::move(value_)); }
  void complete(const std::byte* data, std::size_t bytes) override {
    std::vector<T> v(bytes / sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = data[i] != std::byte{0};
    } else if (bytes) {
      std::memcpy(v.data(), data, bytes);
    }
    promise.set_value(std::move(v));
  }
  void fail(std::exception_ptr e) override { promise.set_exception(e); }

 private:
  std::vector<T> value_;  // the destination of a read in place
};

template <class T> class ScalarCompletion final : public Completion {
 public:
  Promise<T> promise;
  void complete(const std::byte* data, std::size_t) override {
    T v;
    std::memcpy(&v, data, sizeof(T));
    promise.set_value(v);
  }
  void fail(std::exception_ptr e) override { promise.set_exception(e); }
};

}  // namespace detail

template <class T> Future<std::vector<T>> Tensor::to_vector() const {
  auto c = std::make_shared<detail::VectorCompletion<T>>();
  auto state = c->promise.state();
  const FutureHelper helper = detail::submit_read(*this, "to_vector", dtype_of<T>, c);
  return Future<std::vector<T>>(std::move(state), helper);
}

template <class T> Future<T> Tensor::item() const {
  KILN_CHECK(defined() && numel() == 1, "item",
             "expected a tensor with one element, got shape " + (defined() ? shape().str() : std::string("(undefined)")));
  auto c = std::make_shared<detail::ScalarCompletion<T>>();
  auto state = c->promise.state();
  const FutureHelper helper = detail::submit_read(*this, "item", dtype_of<T>, c);
  return Future<T>(std::move(state), helper);
}

}  // namespace kiln
