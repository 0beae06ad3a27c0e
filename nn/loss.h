// kiln::nn losses, with torch.nn.functional's semantics and defaults: classification
// (cross_entropy, nll_loss), regression (mse, l1, huber, smooth L1), binary cross entropy (on
// probabilities or logits), KL divergence and the pairwise margin losses.
//
// Each is a composite of kiln's public ops: it runs on every device, fuses, and its gradient
// (for the inputs and for weights that require it) comes from autograd. Unlike torch, inputs
// and targets must have the same shape where torch would broadcast them with a warning; a
// mismatch throws kiln::Error naming the loss and the shapes.
#pragma once
#include <cstdint>

#include "kiln/engine/kiln.h"

namespace kiln::nn {

// How the per-element losses are combined. batchmean (the sum divided by the batch size,
// dim 0) is only for kl_div, as in torch; the other losses reject it.
enum class Reduction { none, mean, sum, batchmean };

struct CrossEntropyOptions {
  Tensor weight{};                   // [C] weight of each class, or undefined (all 1)
  std::int64_t ignore_index = -100;  // class-index targets equal to it add nothing
  double label_smoothing = 0.0;      // in [0, 1]
  Reduction reduction = Reduction::mean;
};

struct NllLossOptions {
  Tensor weight{};
  std::int64_t ignore_index = -100;
  Reduction reduction = Reduction::mean;
};

// logits [N, C], [N, C, d1, ...] or [C] (class dim 1, or 0 for [C]) and either
//   - i64 class indices of the logits' shape without the class dim ([N, d1, ...] or []): the
//     mean divides by the summed weights of the targets that are not ignored (NaN when every
//     target is ignored, as torch); with label_smoothing ε the loss is (1 - ε) nll + ε / C
//     times the weighted sum of -log_softmax over the classes, normalized the same way;
//   - floating class probabilities of the logits' shape: -sum(weight * target * log_softmax),
//     the mean dividing by the number of samples (N * d1 * ...); ε mixes the target with the
//     uniform distribution; ignore_index does not apply.
// reduction none gives one loss per sample ([N, d1, ...]).
Tensor cross_entropy(Tensor logits, Tensor target, const CrossEntropyOptions& options = {});
// The class-index half of cross_entropy on log-probabilities (no log_softmax, no smoothing).
Tensor nll_loss(Tensor log_probs, Tensor target, const NllLossOptions& options = {});

// (input - target)^2, |input - target|.
Tensor mse_loss(Tensor input, Tensor target, Reduction reduction = Reduction::mean);
Tensor l1_loss(Tensor input, Tensor target, Reduction reduction = Reduction::mean);
// z = |input - target|: 0.5 z^2 where z < delta, else delta (z - 0.5 delta). delta > 0.
Tensor huber_loss(Tensor input, Tensor target, Reduction reduction = Reduction::mean, double delta = 1.0);
// 0.5 z^2 / beta where z < beta, else z - 0.5 beta; beta == 0 is the L1 loss. beta >= 0.
Tensor smooth_l1_loss(Tensor input, Tensor target, Reduction reduction = Reduction::mean, double beta = 1.0);

// -weight (target log(probs) + (1 - target) log(1 - probs)), each log clamped at -100 as torch
// does (so probs of 0 or 1 give a finite loss). probs outside [0, 1] give NaN. weight (or
// undefined) broadcasts to probs.
Tensor binary_cross_entropy(Tensor probs, Tensor target, Tensor weight = {}, Reduction reduction = Reduction::mean);
// The same on logits, in the stable form (1 - target) x + (1 + (pos_weight - 1) target) softplus(-x);
// pos_weight (the weight of positive examples, e.g. [C] for [N, C] logits) and weight broadcast.
Tensor binary_cross_entropy_with_logits(Tensor logits, Tensor target, Tensor weight = {}, Tensor pos_weight = {},
                                        Reduction reduction = Reduction::mean);

// KL divergence with input as log-probabilities: target (log target - input), 0 where the target
// is 0; with log_target, exp(target) (target - input). mean averages every element (torch's
// 'mean'); batchmean divides the sum by the batch size, the KL divergence proper.
Tensor kl_div(Tensor input, Tensor target, Reduction reduction = Reduction::mean, bool log_target = false);

// x1, x2 [N, D] (or [D]), y [N] (or []) of 1 / -1: 1 - cos(x1, x2) where y = 1,
// max(0, cos - margin) where y = -1 (0 for any other y, as torch).
Tensor cosine_embedding_loss(Tensor x1, Tensor x2, Tensor y, double margin = 0.0,
                             Reduction reduction = Reduction::mean);
// max(0, -y (x1 - x2) + margin), x1, x2 and y of one shape.
Tensor margin_ranking_loss(Tensor x1, Tensor x2, Tensor y, double margin = 0.0, Reduction reduction = Reduction::mean);

}  // namespace kiln::nn
