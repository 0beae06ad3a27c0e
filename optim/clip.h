// Gradient clipping, as torch.nn.utils.clip_grad_norm_ and clip_grad_value_ do it, on a
// Gradients value: the gradients of the module's trainable parameters are replaced by clipped
// ones. Nothing waits for the device: the norm is a 0-d tensor, and the scaling is elementwise
// work that the next optimizer step's kernels take in.
//
//   Gradients grads = backward(loss);
//   const Tensor norm = optim::clip_grad_norm(grads, model, 1.0);
//   model = opt.step(lr, std::move(model), grads);
#pragma once
#include <limits>

#include "kiln/nn/module.h"

namespace kiln::optim {

// Scales every gradient by min(1, max_norm / (total_norm + 1e-6)), where total_norm is the
// norm_type-norm of all the gradients together (2: Euclidean; infinity: the largest |g|).
// Returns total_norm before clipping (0-d, f32).
Tensor clip_grad_norm(Gradients& grads, const nn::Module& module, double max_norm, double norm_type = 2.0);

// Clamps every gradient element to [-clip_value, clip_value].
void clip_grad_value(Gradients& grads, const nn::Module& module, double clip_value);

}  // namespace kiln::optim
