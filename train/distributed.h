// What the Learner asks of a run on several processes (data-parallel training), as an interface
// so that train/ knows no collective library: dist/ implements it (dist::DataParallel). With one
// set in LearnerOptions::distributed, the Learner gives every rank rank 0's weights at the start
// (after a resume), averages the gradients of a loss-returning step over the ranks, averages the
// epoch's metrics, shows the dashboard and writes the report and checkpoints on rank 0 only
// (the others wait for the checkpoint, then all read the same one on resume), and stops every
// rank at the same batch when one is interrupted.
#pragma once
#include <cstdint>

#include "kiln/autograd/autograd.h"
#include "kiln/nn/module.h"

namespace kiln::train {

class DistributedTraining {
 public:
  virtual ~DistributedTraining() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  bool is_main() const { return rank() == 0; }

  // Every rank's model takes rank 0's values (and a model that differs across ranks is an error).
  virtual void replicate(nn::Module& model) = 0;
  // The gradients of `loss` with respect to model's trainable parameters, averaged over the ranks.
  virtual Gradients backward(const nn::Module& model, const Tensor& loss) = 0;
  // Before each training epoch (a distributed sampler takes the epoch's shard).
  virtual void begin_epoch(std::int64_t epoch) = 0;
  // The mean over the ranks (metrics), the sum (counts, throughput), and whether any rank says yes.
  virtual double mean(double value) = 0;
  virtual double sum(double value) = 0;
  virtual bool any(bool value) = 0;
  // Every rank waits here for the others (after rank 0 wrote a checkpoint).
  virtual void barrier() = 0;
};

}  // namespace kiln::train
