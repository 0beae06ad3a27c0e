#include "kiln/train/gradient_update.h"

#include <utility>

#include "kiln/optim/clip.h"

namespace kiln::train {

void clip_gradients(Gradients& grads, const nn::Module& model, const ClipOptions& clip) {
  if (clip.max_value) optim::clip_grad_value(grads, model, *clip.max_value);
  if (clip.max_norm) optim::clip_grad_norm(grads, model, *clip.max_norm, clip.norm_type);
}

void GradientUpdate::add(Gradients grads) {
  if (batches_ == 0)
    sum_ = std::move(grads);
  else
    sum_ += grads;
  ++batches_;
}

Gradients GradientUpdate::take(const nn::Module& model) {
  Gradients grads = std::exchange(sum_, Gradients{});
  const std::int64_t batches = std::exchange(batches_, 0);
  // One batch is stepped with its own gradients, untouched: the same bits as a loop without
  // accumulation.
  if (batches > 1) {
    const double scale = 1.0 / static_cast<double>(batches);
    for (const Tensor& p : model.parameters(/*trainable_only=*/true))
      if (grads.contains(p)) grads.set(p, mul(grads.get(p), scale));
  }
  clip_gradients(grads, model, clip_);
  return grads;
}

}  // namespace kiln::train
