// Batch normalization over the whole data-parallel batch (PyTorch's SyncBatchNorm): in training
// mode the per-channel statistics are those of every rank's rows together, so that N ranks with
// B/N rows each normalize as one process with B rows would. Small per-rank batches (detection,
// segmentation) need it: each rank's own statistics would be too noisy.
//
//   dist::SyncBatchNorm bn(group, 64);    // in place of nn::BatchNorm2d(64); x: [N, C, *]
//
// Training forward: one all_reduce of [count, sum x, sum x²] per channel; the running statistics
// move toward the global mean and unbiased variance, so they stay the same on every rank.
// Backward: one all_reduce of the per-channel sums of dy and dy·x̂ for the input gradient; the
// weight and bias gradients are this rank's own sums, which data parallelism's gradient
// averaging then combines, as with PyTorch's. Eval mode is plain batch normalization with the
// running statistics (no communication). Parameters and buffers have nn::BatchNorm2d's names, so
// checkpoints load into either. Every rank must run the layer the same number of times, in the
// same order (it calls collectives). The group must outlive the module and its copies.
#pragma once
#include "kiln/dist/process_group.h"
#include "kiln/nn/norm.h"

namespace kiln::dist {

class SyncBatchNorm : public nn::detail::BatchNormBase {
 public:
  using Options = nn::BatchNormOptions;
  SyncBatchNorm(ProcessGroup& group, std::int64_t num_features, const nn::BatchNormOptions& options = {});
  Tensor forward(const Tensor& x) const;  // [N, C, *], f32
  KILN_MODULE(SyncBatchNorm, weight, bias, running_mean, running_var, num_batches_tracked)

 private:
  Tensor forward_training(const Tensor& x) const;

  ProcessGroup* group_;
  nn::BatchNormOptions options_;
};

}  // namespace kiln::dist
