// The two kinds of tensors a module owns. A Parameter is trained: while trainable it holds a
// leaf that requires gradients, so a forward pass records the ops on it and backward() returns
// its gradient; frozen, it holds plain values. A Buffer is state that is saved but never
// trained (BatchNorm's running statistics): a forward pass in training mode may replace its
// value, so it lives in a shared cell under a lock, and forward passes on many threads at once
// stay safe. Both are value types: copying shares the tensors (and a buffer's cell).
#pragma once
#include <memory>
#include <mutex>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/kiln.h"

namespace kiln::nn {

class Parameter {
 public:
  Parameter() = default;
  // `value` is taken as the parameter's value; its own graph, if any, is cut.
  explicit Parameter(const Tensor& value, bool trainable = true) { assign(value, trainable); }

  bool defined() const { return value_.defined(); }
  const Tensor& value() const { return value_; }
  operator const Tensor&() const { return value_; }  // NOLINT: layers pass parameters to ops
  const Shape& shape() const { return value_.shape(); }
  bool trainable() const { return trainable_; }

  // A new value (an optimizer's update, a loaded weight); keeps trainable().
  void set(const Tensor& value) { assign(value, trainable_); }
  void set_trainable(bool on) { assign(value_, on); }
  // Moves the value out; the parameter is undefined until the next set(). An optimizer hands
  // the only handle to the update's ops this way, so the new value may take the old buffer.
  Tensor take() { return std::move(value_); }

 private:
  void assign(const Tensor& value, bool trainable) {
    trainable_ = trainable;
    if (!value.defined()) {
      value_ = Tensor{};
    } else {
      value_ = trainable && is_floating(value.dtype()) ? require_grad(detach(value)) : detach(value);
    }
  }
  Tensor value_;
  bool trainable_ = true;
};

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(const Tensor& value) : cell_(std::make_shared<Cell>()) { cell_->value = detach(value); }

  bool defined() const { return cell_ != nullptr && get().defined(); }
  Tensor get() const {
    if (!cell_) return Tensor{};
    std::lock_guard<std::mutex> lock(cell_->mutex);
    return cell_->value;
  }
  // Replaces the value for every copy that shares this buffer.
  void set(const Tensor& value) {
    if (!cell_) cell_ = std::make_shared<Cell>();
    std::lock_guard<std::mutex> lock(cell_->mutex);
    cell_->value = detach(value);
  }
  // Replaces the value in the shared cell: a forward pass (const) updating running statistics.
  // The buffer must hold a value already.
  void update(const Tensor& value) const {
    KILN_CHECK(cell_ != nullptr, "Buffer", "update of a buffer that holds no value");
    std::lock_guard<std::mutex> lock(cell_->mutex);
    cell_->value = detach(value);
  }
  // Gives this buffer a cell of its own (deep clones, moves to another device).
  void unshare(const Tensor& value) { *this = Buffer(value); }

 private:
  struct Cell {
    std::mutex mutex;
    Tensor value;
  };
  std::shared_ptr<Cell> cell_;
};

}  // namespace kiln::nn
