#include "kiln/dist/sync_batch_norm.h"

#include <memory>

#include "kiln/autograd/autograd.h"

namespace kiln::dist {

namespace {

// What the backward of one training forward needs from it.
struct Saved {
  Tensor xhat;       // (x - mean) * invstd, x's shape
  Tensor scale;      // invstd * weight, per channel
  double count = 0;  // rows · spatial positions on every rank together (M)
};

// [C] as [1, C, 1, ...] for a tensor of rank r.
Tensor per_channel(const Tensor& t, int r) {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(r), 1);
  shape[1] = t.shape()[0];
  return reshape(t, shape);
}

}  // namespace

SyncBatchNorm::SyncBatchNorm(ProcessGroup& group, std::int64_t num_features, const nn::BatchNormOptions& options)
    : BatchNormBase("SyncBatchNorm", num_features, options), group_(&group), options_(options) {}

Tensor SyncBatchNorm::forward(const Tensor& x) const {
  if (!is_training()) return run(x, 2, 8, "[N, C, *]");
  const std::int64_t c = running_mean.get().shape()[0];
  KILN_CHECK(
      x.defined() && x.rank() >= 2 && x.shape()[1] == c && x.dtype() == DType::f32, where(),
      "expected an f32 input [N, C, *] with C = " + std::to_string(c) + ", got " +
          (x.defined() ? std::string(dtype_name(x.dtype())) + x.shape().str() : std::string("an undefined tensor")));
  return guarded([&] { return forward_training(x); });
}

Tensor SyncBatchNorm::forward_training(const Tensor& x) const {
  const std::int64_t c = x.shape()[1];
  const int r = x.rank();
  Dims dims{0};
  for (int d = 2; d < r; ++d) dims.push_back(d);
  const TensorOptions f32{DType::f32, x.device()};
  const Tensor w = weight.defined() ? Tensor(weight) : ones(Shape{c}, f32);
  const Tensor b = bias.defined() ? Tensor(bias) : zeros(Shape{c}, f32);
  const double eps = options_.eps;
  ProcessGroup* group = group_;
  auto saved = std::make_shared<Saved>();
  Tensor mean, var;  // global, biased

  auto forward = [&](const std::vector<Tensor>& in) {
    const Tensor& xs = in[0];
    const double local_count = static_cast<double>(xs.numel() / c);
    // One collective for the three statistics: [count, sum x (C), sum x² (C)].
    const Tensor stats =
        group->all_reduce(cat({full(Shape{1}, local_count, f32), sum(xs, dims), sum(square(xs), dims)}, 0));
    saved->count = static_cast<double>(narrow(stats, 0, 0, 1).item<float>().get());
    KILN_CHECK(saved->count > 1, "SyncBatchNorm",
               "expected more than 1 value per channel over all ranks when training, got " +
                   std::to_string(saved->count) + " (this rank's input " + xs.shape().str() + ")");
    mean = div(narrow(stats, 0, 1, c), saved->count);
    // E[x²] - E[x]², clamped: rounding can make it slightly negative for constant channels. It is
    // what one collective of sums allows; channels whose mean is far larger than their spread
    // lose digits here (nn::BatchNorm's kernel, with all rows at hand, does not).
    var = relu(sub(div(narrow(stats, 0, 1 + c, c), saved->count), square(mean)));
    const Tensor invstd = rsqrt(add(var, eps));
    saved->xhat = mul(sub(xs, per_channel(mean, r)), per_channel(invstd, r));
    saved->scale = mul(invstd, in[1]);
    return std::vector<Tensor>{add(mul(saved->xhat, per_channel(in[1], r)), per_channel(in[2], r))};
  };
  auto backward = [saved, group, dims, c, r](const std::vector<Tensor>& g) {
    const Tensor& dy = g[0];
    const Tensor sum_dy = sum(dy, dims), sum_dy_xhat = sum(mul(dy, saved->xhat), dims);
    const Tensor global = group->all_reduce(cat({sum_dy, sum_dy_xhat}, 0));
    const Tensor mean_dy = div(narrow(global, 0, 0, c), saved->count);
    const Tensor mean_dy_xhat = div(narrow(global, 0, c, c), saved->count);
    const Tensor dx = mul(sub(sub(dy, per_channel(mean_dy, r)), mul(saved->xhat, per_channel(mean_dy_xhat, r))),
                          per_channel(saved->scale, r));
    // This rank's own weight and bias gradients: data parallelism averages them over the ranks.
    return std::vector<Tensor>{dx, sum_dy_xhat, sum_dy};
  };
  Tensor y = custom_function({x, w, b}, forward, backward, "SyncBatchNorm")[0];

  // The running statistics are buffers outside the graph, moved with the unbiased variance.
  NoGradGuard no_grad;
  const double momentum = options_.momentum;
  const double unbiased = saved->count / (saved->count - 1);
  running_mean.update(add(mul(running_mean.get(), 1.0 - momentum), mul(detach(mean), momentum)));
  running_var.update(add(mul(running_var.get(), 1.0 - momentum), mul(detach(var), momentum * unbiased)));
  const Tensor batches = num_batches_tracked.get();
  num_batches_tracked.update(add(batches, scalar(1, TensorOptions{DType::i64, batches.device()})));
  return y;
}

}  // namespace kiln::dist
