// Models that onnx::export_model writes, shared by the export tests (test_onnx_export.cpp) and
// the ONNX Runtime check (bench/onnx/export_models.cpp): an MLP, a CNN with pooling, a
// transformer encoder layer, and OpZoo, one pass through every op family export maps.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::test {

struct ExportMlp : nn::Module {
  nn::Linear fc1, fc2, fc3;
  ExportMlp(std::int64_t in, std::int64_t hidden, std::int64_t out)
      : fc1(in, hidden), fc2(hidden, hidden / 2), fc3(hidden / 2, out) {}
  Tensor forward(const Tensor& x) const { return log_softmax(fc3(tanh(fc2(gelu(fc1(x))))), -1); }
  KILN_MODULE(ExportMlp, fc1, fc2, fc3)
};

// Pooling, sigmoid, a bias-free convolution and softmax: what the main job's CNN does not use.
// Input [N, 1, 14, 14].
struct PoolCnn : nn::Module {
  nn::Conv2d conv1{1, 4, {3}}, conv2{4, 6, {3}, {.padding = {1}, .bias = false}};
  nn::Linear fc{6 * 3 * 3, 5};
  Tensor forward(const Tensor& x) const {
    Tensor h = max_pool2d(relu(conv1(x)), {.kernel = {2}});                             // [N, 4, 6, 6]
    h = avg_pool2d(sigmoid(conv2(h)), {.kernel = {3}, .stride = {2}, .padding = {1}});  // [N, 6, 3, 3]
    return softmax(fc(flatten(h, 1)), 1);
  }
  KILN_MODULE(PoolCnn, conv1, conv2, fc)
};

// A post-norm encoder layer, batch first, with GELU (its dropout is off in eval()).
inline nn::TransformerEncoderLayer export_encoder(std::int64_t d_model, std::int64_t heads, std::int64_t ff) {
  return nn::TransformerEncoderLayer(
      d_model, heads, {.dim_feedforward = ff, .activation = nn::TransformerActivation::gelu, .batch_first = true});
}

// Every op family export writes (elementwise with their composites, reductions, layout,
// indexing, constants made inside the pass), each on a batch it keeps dynamic. Input [N, 6, 8].
struct OpZoo : nn::Module {
  nn::Linear fc{8, 8};
  Tensor forward(const Tensor& x) const {
    const Tensor h = fc(x);
    const auto f32 = [](Tensor t) { return cast(std::move(t), DType::f32); };
    Tensor y = log1p(abs(h)) + expm1(h * 0.1) - silu(h) + rsqrt(square(h) + 1.0) + reciprocal(abs(h) + 2.0);
    y = y + remainder(h, 0.7) + clamp(h, -0.5, 0.5) + clamp(h, std::nullopt, 0.2) + pow(abs(h) + 0.5, 1.5);
    y = y + maximum(h, h * 0.1) - minimum(h, sin(h)) + erf(h) * cos(h) + exp(-square(h)) + sqrt(abs(h));
    y = y + softplus(h) + floor(h * 3.0) + ceil(h) + round(h * 2.0) + sign(h) + (2.0 - h) / (abs(h) + 1.0);
    y = y + kiln::where(ne(h, 0.25), sigmoid(h), tanh(h)) + f32(logical_and(gt(h, -0.3), le(h, 0.3))) +
        f32(logical_xor(ge(h, 0.0), lt(h, 0.5))) + f32(logical_not(logical_or(lt(h, -1.0), eq(h, 1.0))));
    // Reductions, with and without keepdim.
    y = y + mean(h, {-1}, true) * var(h, {-1}, 1.0, true) + std(h, {1}, 0.0, true) + logsumexp(h, {2}, true);
    y = y + unsqueeze(sum(h, {1}), 1) + unsqueeze(max(h, {2}), 2) - unsqueeze(min(h, {1}), 1);
    y = y + softmax(h, 1) + log_softmax(h, -1) + cumsum(h, 2) * 0.1 + f32(unsqueeze(argmax(h, 2), 2));
    // Layout and indexing.
    const Tensor part = narrow(h, 2, 1, 4);  // [N, 6, 4]
    y = y + cat({part, flip(part, {2})}, 2) + repeat(part, {1, 1, 2}) + tril(h) + triu(h, 1);
    y = y + narrow(pad(h, {1, 1}, 0.5), 2, 0, 8) + expand(mean(h, {2}, true), {-1, -1, 8});
    y = y + index_select(h, 2, from_vector(std::vector<std::int64_t>{7, 6, 5, 4, 3, 2, 1, 0}, {8}));
    y = masked_fill(y, gt(h, 0.9), 0.0) + arange(8.0) * 0.01 + full({6, 1}, 0.5);
    const Tensor scores = softmax(matmul(h, permute(h, {0, 2, 1})), -1);  // [N, 6, 6]
    y = y + matmul(scores, h) + reshape(reshape(h, {h.size(0), 48}), {h.size(0), 6, 8});
    return y;
  }
  KILN_MODULE(OpZoo, fc)
};

}  // namespace kiln::test
