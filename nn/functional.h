// kiln::nn functional ops: the stateless math of layers (linear, activations, dropout, the
// normalizations, embedding), with torch.nn.functional's semantics and defaults.
//
// Each is a composite of kiln's public ops, so it runs on every device, fuses with its
// neighbours and takes gradients through autograd like any other op. Layers (nn/nn.h) hold the
// parameters and call these. Bad shapes throw kiln::Error on the caller's thread, naming the
// function and the shapes.
#pragma once
#include <cstdint>
#include <optional>

#include "kiln/engine/kiln.h"

namespace kiln::nn {

// x [..., in] times weight [out, in] transposed, plus bias [out]: [..., out].
Tensor linear(Tensor x, Tensor weight, Tensor bias = {});
// y[..., k] = x1[..., :] weight[k] x2[..., :] + bias[k]; x1 [..., in1] and x2 [..., in2] share
// their leading dims, weight is [out, in1, in2], bias [out].
Tensor bilinear(Tensor x1, Tensor x2, Tensor weight, Tensor bias = {});

// x where x > 0, else negative_slope * x (the gradient at 0 is negative_slope, as in torch).
Tensor leaky_relu(Tensor x, double negative_slope = 0.01);
// x where x > 0, else alpha * (exp(x) - 1).
Tensor elu(Tensor x, double alpha = 1.0);
// leaky_relu with a learned slope: weight has 1 element, or one per channel (dim 1 of x, which
// then has at least 2 dims).
Tensor prelu(Tensor x, Tensor weight);
// The exact (erf) GELU, or torch's approximate='tanh' form. No default on purpose: nn::gelu(x)
// would be ambiguous with kiln::gelu(x), which is the exact form.
Tensor gelu(Tensor x, bool tanh_approximation);
// x * tanh(softplus(x)).
Tensor mish(Tensor x);

// In training, each element is kept with probability 1 - p and scaled by 1 / (1 - p) (the
// mask is a bernoulli draw from gen); otherwise x itself. p == 1 gives x * 0: zeros, NaN
// staying NaN as in torch. 0 <= p <= 1.
Tensor dropout(Tensor x, double p, bool training, Generator& gen = default_generator());

// Normalizes over the trailing dims normalized_shape (x's last dims), then scales by weight
// and adds bias (each of shape normalized_shape, or undefined). Biased variance, as torch.
Tensor layer_norm(Tensor x, const Shape& normalized_shape, Tensor weight = {}, Tensor bias = {}, double eps = 1e-5);
// x [N, C, *]: normalizes each of `groups` groups of C / groups channels (with their spatial
// elements) per sample; weight and bias are [C].
Tensor group_norm(Tensor x, std::int64_t groups, Tensor weight = {}, Tensor bias = {}, double eps = 1e-5);
// x [N, C, *] with at least one spatial dim: normalizes each (sample, channel) over its spatial
// elements, from the input's own statistics (no running statistics); weight and bias are [C].
Tensor instance_norm(Tensor x, Tensor weight = {}, Tensor bias = {}, double eps = 1e-5);
// x * rsqrt(mean(x^2 over normalized_shape) + eps) * weight. eps follows torch 2.x's
// F.rms_norm: when not given, the machine epsilon of f32 (about 1.19e-7), the type it computes in.
Tensor rms_norm(Tensor x, const Shape& normalized_shape, Tensor weight = {}, std::optional<double> eps = std::nullopt);

// Batch normalization over dims 0, 2, 3, ... of x [N, C] or [N, C, *]; running_mean,
// running_var, weight and bias are [C] (each may be undefined; the running statistics only
// both at once, and they are required when not training).
//   training: normalizes with the batch's mean and biased variance; the returned running
//             statistics are (1 - momentum) * running + momentum * batch statistic, with the
//             unbiased variance, computed without recording gradients (as torch updates its
//             buffers). torch's momentum=None (a cumulative average) is momentum = 1 / batches.
//   otherwise: normalizes with the running statistics, which are returned as they came.
// New values are returned; the tensors passed in are never changed.
struct BatchNormResult {
  Tensor output, running_mean, running_var;
};
BatchNormResult batch_norm(Tensor x, Tensor running_mean, Tensor running_var, Tensor weight, Tensor bias, bool training,
                           double momentum = 0.1, double eps = 1e-5);

// Rows of weight [num_embeddings, dim] picked by i64 indices of any shape: [*indices, dim].
// The row padding_idx (negative counts from the end) is returned as it is but gets no
// gradient, as in torch. An index out of range fails the result's future.
Tensor embedding(Tensor indices, Tensor weight, std::optional<std::int64_t> padding_idx = std::nullopt);

}  // namespace kiln::nn
