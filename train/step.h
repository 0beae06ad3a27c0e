// The step contract: what a Learner's step returns, and what its callbacks are told.
//
// A step comes in two forms (train/learner.h):
//
//   - it returns the batch's StepOutput (its loss and what the metrics read), and the Learner does
//     the rest: backward, gradient accumulation and clipping, the optimizer and schedule steps;
//   - it takes the model and returns the updated one in a TrainOutput (Burn's TrainStep): it calls
//     backward and its own optimizers itself (a GAN's two, a clipping of its own), and the Learner
//     only runs the loop, the metrics, the checkpoints and the callbacks.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "kiln/engine/kiln.h"
#include "kiln/train/run_info.h"

namespace kiln::train {

// What one step reports. `loss` is 0-d (what backward starts from in the loss-returning form;
// the "loss" metric in both); `outputs` [B, C] (logits or scores) and `labels` [B] (class indices)
// feed the classification metrics; `items` counts the examples (B), which weigh the step in the
// phase's means. `extra` holds any other tensors a metric reads by name (a regression's
// predictions and targets, a GAN's second loss).
struct StepOutput {
  Tensor loss{};
  Tensor outputs{};
  Tensor labels{};
  std::int64_t items = 0;
  std::map<std::string, Tensor> extra{};

  // The extra tensor `name`; a kiln::Error naming it and the ones there are when it is missing.
  const Tensor& get(const std::string& name) const;
};

// What a full-control step returns: the updated model and the batch's output for the metrics.
template <class M>
struct TrainOutput {
  M model;
  StepOutput output;
};

// Told after every training batch (on_step_end).
struct StepEnd {
  std::int64_t epoch = 0;  // 1-based, as the dashboard shows it
  std::int64_t batch = 0;  // batches of this epoch done, this one included (1-based)
  // Optimizer steps of the run so far (with accumulate_grad_batches = N, one per N batches; the
  // full-control form counts every batch as a step).
  std::int64_t step = 0;
  bool updated = false;  // whether this batch ended an update (always, without accumulation)
  const StepOutput& output;
};

// Told after every epoch (on_epoch_end): its training and validation summaries (empty without a
// validation loader) as the dashboard shows them. Set `stop` to end the run after this epoch
// (after its checkpoint), as early stopping does; the checkpoint does not record it, so a run
// resumed from there goes on unless the callback stops it again.
struct EpochEnd {
  std::int64_t epoch = 0;  // 1-based: epochs done
  std::int64_t step = 0;   // optimizer steps of the run so far
  MetricValues train{};
  MetricValues valid{};
  bool stop = false;

  // The value of `name` in `valid`, else (no validation pass, or a training-only value such as
  // "lr") in `train`; none when neither has it.
  std::optional<double> value(const std::string& name) const;
};

}  // namespace kiln::train
