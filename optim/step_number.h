// A number of one parameter's update that changes from step to step: the learning rate, Adam's
// bias corrections. An optimizer computes them on the host from the step's learning rate and
// count (Optimizer::step_numbers) and its update reads them through UpdateContext::number(k):
// a double in an eager step, so the op takes it as a scalar operand; in a recorded step
// (optim/recorded_step.h) a 0-d f32 tensor that every replay fills with the value of its own
// step, so no step's value is a constant of the recording. Both give the same bits: an f32 op
// rounds a scalar operand to f32, and the replay writes the number rounded the same way.
#pragma once
#include <utility>

#include "kiln/engine/kiln.h"

namespace kiln::optim {

class StepNumber {
 public:
  StepNumber(double value) : value_(value) {}  // NOLINT: an eager step's numbers are doubles
  explicit StepNumber(Tensor value) : tensor_(std::move(value)) {}

  bool is_tensor() const { return tensor_.defined(); }
  double value() const { return value_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  double value_ = 0.0;
  Tensor tensor_;
};

inline Tensor operator*(Tensor a, const StepNumber& n) {
  return n.is_tensor() ? mul(std::move(a), n.tensor()) : mul(std::move(a), n.value());
}
inline Tensor operator/(Tensor a, const StepNumber& n) {
  return n.is_tensor() ? div(std::move(a), n.tensor()) : div(std::move(a), n.value());
}

}  // namespace kiln::optim
