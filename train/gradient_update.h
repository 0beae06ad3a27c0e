// What the Learner does with the gradients of a loss-returning step before the optimizer step:
// sums them over accumulate_grad_batches batches, takes their mean, and clips them.
//
// The mean: a group of k batches (k = accumulate_grad_batches, or fewer for the epoch's last
// group) steps with (g_1 + ... + g_k) / k, the gradient of the mean of the k losses. With batches
// of one size that is the gradient of one batch k times as large (PyTorch's `loss / k` loop),
// so the learning rate needs no change when accumulation is turned on.
#pragma once
#include <cstdint>
#include <optional>

#include "kiln/nn/module.h"

namespace kiln::train {

struct ClipOptions {
  std::optional<double> max_norm{};  // optim::clip_grad_norm
  double norm_type = 2.0;
  std::optional<double> max_value{};  // optim::clip_grad_value, applied before the norm
};

// Clips `grads` as `clip` says (by value first, then by norm): ops only, nothing waits.
void clip_gradients(Gradients& grads, const nn::Module& model, const ClipOptions& clip);

class GradientUpdate {
 public:
  explicit GradientUpdate(ClipOptions clip = {}) : clip_(clip) {}

  // Adds one batch's gradients to the group's.
  void add(Gradients grads);
  std::int64_t batches() const { return batches_; }
  bool empty() const { return batches_ == 0; }
  // The group's gradients for the optimizer step: their mean over the batches added, clipped.
  // The group starts afresh. Nothing waits for the device.
  Gradients take(const nn::Module& model);

 private:
  ClipOptions clip_;
  Gradients sum_;
  std::int64_t batches_ = 0;
};

}  // namespace kiln::train
