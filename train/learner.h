// The Learner: the training loop as a library object (Lightning's Trainer, Keras's fit, Burn's
// Learner). The user brings the model, the data, the optimizer and schedule, and a step function
// that computes a batch's loss (and the outputs the metrics read); the Learner runs the epochs of
// training and validation, reports the metrics on a live dashboard, writes checkpoints and an
// HTML report, resumes from the last checkpoint, stops early, and stops cleanly on Ctrl-C.
//
//   train::Learner learner(SmallCNN{}, std::make_unique<optim::Adam>(optim::AdamOptions{.lr = 1e-3}),
//                          std::make_unique<optim::ConstantLr>(1e-3),
//                          [](const SmallCNN& m, const data::Batch& b) {
//                            Tensor logits = m(b.inputs);
//                            return train::StepOutput{nn::cross_entropy(logits, b.labels), logits, b.labels,
//                                                     b.size()};
//                          },
//                          {.epochs = 5, .checkpoint_dir = "runs/cnn", .report = "runs/cnn/report.html"});
//   learner.add_metric(train::accuracy());
//   train::FitResult r = learner.fit(train_loader, &test_loader);
//   SmallCNN model = learner.model();
//
// A step's update is `model = optimizer.step(lr, std::move(model), grads)`: the module is a value,
// so the weights a validation pass or another thread reads never change under it.
#pragma once
#include <functional>
#include <memory>

#include "autograd/autograd.h"
#include "data/loader.h"
#include "train/learner_core.h"

namespace kiln::train {

template <class M, class BatchT = data::Batch>
class Learner {
 public:
  using Step = std::function<StepOutput(const M& model, const BatchT& batch)>;

  Learner(M model, std::unique_ptr<optim::Optimizer> optimizer, std::unique_ptr<optim::LrScheduler> schedule, Step step,
          LearnerOptions options = {})
      : model_(std::move(model)),
        step_(std::move(step)),
        core_(std::move(optimizer), std::move(schedule), std::move(options)) {
    KILN_CHECK(static_cast<bool>(step_), "Learner", "no step function");
  }

  // Metrics beside the loss (which is always reported), computed on training and validation.
  Learner& add_metric(std::unique_ptr<Metric> metric) {
    core_.add_metric(std::move(metric));
    return *this;
  }

  // Runs the epochs (from the last checkpoint when there is one and options.resume is on).
  template <class Item>
  FitResult fit(const data::DataLoader<Item, BatchT>& train, const data::DataLoader<Item, BatchT>* valid = nullptr) {
    Progress at = core_.begin_run(model_, train.num_batches(), valid ? valid->num_batches() : 0);
    while (at.epoch < core_.options().epochs) {
      model_.train();
      core_.begin_phase(Phase::train, at.epoch);
      std::int64_t batch_index = at.batch;
      for (const BatchT& batch : train.epoch(at.epoch, at.batch)) {
        const StepOutput out = step_(model_, batch);
        const Gradients grads = backward(out.loss);
        model_ = core_.optimizer().step(core_.schedule().lr(), std::move(model_), grads);
        core_.after_train_step(out);
        ++batch_index;
        if (core_.stop_requested()) return core_.interrupted(model_, Progress{at.epoch, batch_index});
      }
      core_.end_phase();
      if (valid) {
        model_.eval();
        const NoGradGuard no_grad;
        core_.begin_phase(Phase::valid, at.epoch);
        for (const BatchT& batch : valid->epoch(0)) {
          core_.after_valid_step(step_(model_, batch));
          // Ctrl-C during validation: the checkpoint holds the epoch's training (batch_index is
          // the epoch's last); a resumed run validates again, then ends the epoch.
          if (core_.stop_requested()) return core_.interrupted(model_, Progress{at.epoch, batch_index});
        }
        core_.end_phase();
      }
      at = Progress{at.epoch + 1, 0};
      const bool stop = core_.end_epoch(model_, at);
      if (core_.stop_requested()) return core_.interrupted(model_, at);
      if (stop) break;
    }
    return core_.end_run(model_, at);
  }

  const M& model() const { return model_; }
  MetricHistory history() const { return core_.history(); }
  const LearnerOptions& options() const { return core_.options(); }

 private:
  M model_;
  Step step_;
  LearnerCore core_;
};

// `Learner learner(model, optimizer, schedule, lambda, options)` deduces the model's type; the
// batch type is data::Batch unless given (Learner<M, MyBatch>).
template <class M, class O, class S, class F>
Learner(M, std::unique_ptr<O>, std::unique_ptr<S>, F, LearnerOptions = {}) -> Learner<M>;

}  // namespace kiln::train
