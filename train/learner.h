// The Learner: the training loop as a library object (Lightning's Trainer, Keras's fit, Burn's
// Learner). The user brings the model, the data and a step; the Learner runs the epochs of
// training and validation, reports the metrics on a live dashboard, writes checkpoints and an
// HTML report, resumes from the last checkpoint, stops early, calls the user's callbacks, and
// stops cleanly on Ctrl-C.
//
// The step comes in two forms (train/step.h):
//
//   // 1. It returns the batch's loss; the Learner does backward, accumulation, clipping and the
//   //    optimizer and schedule steps (no schedule: a constant one at the optimizer's own lr).
//   train::Learner learner(SmallCNN{}, std::make_unique<optim::Adam>(optim::AdamOptions{.lr = 1e-3}),
//                          [](const SmallCNN& m, const data::Batch& b) {
//                            Tensor logits = m(b.inputs);
//                            return train::StepOutput{nn::cross_entropy(logits, b.labels), logits, b.labels,
//                                                     b.size()};
//                          },
//                          {.epochs = 5, .checkpoint_dir = "runs/cnn", .clip_grad_norm = 1.0});
//
//   // 2. Full control (Burn's TrainStep): it takes the model and returns the updated one; a
//   //    second step (the loss-returning kind) validates. Its optimizers are the user's; saved
//   //    with the checkpoints when named (save_state).
//   train::Learner gan(Gan{}, [&](Gan m, const data::Batch& b) {
//                        ... backward, g_opt.step(...), d_opt.step(...) ...
//                        return train::TrainOutput<Gan>{std::move(m), {d_loss, {}, {}, b.size()}};
//                      }, validate, {.epochs = 5, .checkpoint_dir = "runs/gan"});
//   gan.save_state("generator", g_opt).save_state("discriminator", d_opt);
//
//   learner.add_metric(train::accuracy());
//   learner.on_epoch_end([](train::EpochEnd& e) { if (e.value("accuracy") > 0.99) e.stop = true; });
//   train::FitResult r = learner.fit(train_loader, &test_loader);
//   SmallCNN model = learner.model();
//
// A step's update is `model = optimizer.step(lr, std::move(model), grads)`: the module is a value,
// so the weights a validation pass or another thread reads never change under it.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>

#include "kiln/autograd/autograd.h"
#include "kiln/data/loader.h"
#include "kiln/train/gradient_update.h"
#include "kiln/train/learner_core.h"
#include "kiln/train/recorded_batch_step.h"
#include "kiln/train/step.h"

namespace kiln::train {

template <class M, class BatchT = data::Batch>
class Learner {
 public:
  // The loss-returning step: the batch's loss and what the metrics read. Both forms validate with it.
  using Step = std::function<StepOutput(const M& model, const BatchT& batch)>;
  // The full-control step: takes the model (hand it to the optimizer with std::move) and returns
  // the updated one with the batch's output.
  using TrainStep = std::function<TrainOutput<M>(M model, const BatchT& batch)>;

  // The loss-returning form. A null schedule is a constant one at the optimizer's own learning
  // rate (optim::Optimizer::lr(), from its options).
  Learner(M model, std::unique_ptr<optim::Optimizer> optimizer, std::unique_ptr<optim::LrScheduler> schedule, Step step,
          LearnerOptions options = {})
      : model_(std::move(model)),
        step_(std::move(step)),
        update_(clip_options(options)),
        core_(std::move(optimizer), std::move(schedule), std::move(options)) {
    KILN_CHECK(static_cast<bool>(step_), "Learner", "no step function");
    KILN_CHECK(core_.has_optimizer(), "Learner", "a step that returns its loss needs an optimizer");
    valid_step_ = step_;
  }
  Learner(M model, std::unique_ptr<optim::Optimizer> optimizer, Step step, LearnerOptions options = {})
      : Learner(std::move(model), std::move(optimizer), nullptr, std::move(step), std::move(options)) {}

  // The full-control form. `valid_step` may be empty when fit() gets no validation loader.
  Learner(M model, TrainStep train_step, Step valid_step, LearnerOptions options = {})
      : model_(std::move(model)),
        train_step_(std::move(train_step)),
        valid_step_(std::move(valid_step)),
        core_(nullptr, nullptr, std::move(options)) {
    KILN_CHECK(static_cast<bool>(train_step_), "Learner", "no training step function");
  }

  // Metrics beside the loss (which is always reported), computed on training and validation.
  Learner& add_metric(std::unique_ptr<Metric> metric) {
    core_.add_metric(std::move(metric));
    return *this;
  }
  // Called after every training batch (after its update, when it ended one) and after every epoch
  // (after its validation, early stopping and per-epoch schedule; before its checkpoint).
  Learner& on_step_end(std::function<void(const StepEnd&)> fn) {
    core_.on_step_end(std::move(fn));
    return *this;
  }
  Learner& on_epoch_end(std::function<void(EpochEnd&)> fn) {
    core_.on_epoch_end(std::move(fn));
    return *this;
  }
  // An optimizer or schedule of the user's (a full-control step's) that the checkpoints save and a
  // resume loads, under `name`. It must outlive the Learner's fit() calls.
  Learner& save_state(std::string name, optim::Optimizer& optimizer) {
    core_.save_state(std::move(name), optimizer);
    return *this;
  }
  Learner& save_state(std::string name, optim::LrScheduler& schedule) {
    core_.save_state(std::move(name), schedule);
    return *this;
  }

  // Runs the epochs (from the last checkpoint when there is one and options.resume is on).
  template <class Item>
  FitResult fit(const data::DataLoader<Item, BatchT>& train, const data::DataLoader<Item, BatchT>* valid = nullptr) {
    KILN_CHECK(!valid || valid_step_, "Learner", "a validation loader needs a validation step");
    update_ = GradientUpdate(clip_options(core_.options()));
    Progress at =
        core_.begin_run(model_, train.num_batches(), valid ? valid->num_batches() : 0, train.options().batch_size);
    recorded_ = recorded_step();
    while (at.epoch < core_.options().epochs) {
      model_.train();
      core_.begin_phase(Phase::train, at.epoch);
      std::int64_t batch_index = at.batch;
      for (const BatchT& batch : train.epoch(at.epoch, at.batch)) {
        const bool updated = train_batch(batch, batch_index);
        ++batch_index;
        // Ctrl-C ends the run after an update: a checkpoint never holds half a group's gradients.
        if (updated && core_.stop_requested()) return core_.interrupted(model_, Progress{at.epoch, batch_index});
      }
      core_.end_phase();
      if (valid) {
        model_.eval();
        const NoGradGuard no_grad;
        core_.begin_phase(Phase::valid, at.epoch);
        for (const BatchT& batch : valid->epoch(0)) {
          core_.after_valid_step(valid_step_(model_, batch));
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
  static ClipOptions clip_options(const LearnerOptions& o) {
    return {.max_norm = o.clip_grad_norm, .norm_type = o.clip_norm_type, .max_value = o.clip_grad_value};
  }

  // One training batch (its index 0-based in the epoch); true when the model was updated after it.
  bool train_batch(const BatchT& batch, std::int64_t batch_index) {
    if (train_step_) {
      // If the step throws, the model it was handed is gone with it.
      TrainOutput<M> r = train_step_(std::move(model_), batch);
      model_ = std::move(r.model);
      core_.after_train_step(r.output, true);
      return true;
    }
    if (recorded_) {
      if (std::optional<StepOutput> out = recorded_->run(batch, core_.schedule().lr())) {
        core_.after_train_step(*out, true);
        return true;
      }
    }
    const StepOutput out = step_(model_, batch);
    DistributedTraining* dist = core_.distributed();
    update_.add(dist ? dist->backward(model_, out.loss) : backward(out.loss));
    const bool ends = core_.ends_group(batch_index);
    if (ends) {
      const Gradients grads = update_.take(model_);
      model_ = core_.optimizer().step(core_.schedule().lr(), std::move(model_), grads);
    }
    core_.after_train_step(out, ends);
    return ends;
  }

  // The recorded step (options.record_steps), where the step allows one: a loss-returning step on
  // data::Batch, one batch an update.
  std::unique_ptr<RecordedBatchStep> recorded_step() {
    if constexpr (std::is_same_v<BatchT, data::Batch>) {
      const LearnerOptions& o = core_.options();
      // A recorded step replays its backward in one message: no gradient all-reduce can join it.
      if (!step_ || !o.record_steps || o.accumulate_grad_batches != 1 || o.distributed) return nullptr;
      if (!RecordedBatchStep::possible(core_.optimizer())) return nullptr;
      return std::make_unique<RecordedBatchStep>(
          model_, core_.optimizer(), [this](const data::Batch& b) { return step_(model_, b); }, clip_options(o));
    } else {
      return nullptr;
    }
  }

  M model_;
  Step step_;             // the loss-returning form's
  TrainStep train_step_;  // the full-control form's
  Step valid_step_;
  GradientUpdate update_;
  LearnerCore core_;
  std::unique_ptr<RecordedBatchStep> recorded_;  // during fit(), see recorded_step()
};

// `Learner learner(model, optimizer, schedule, lambda, options)`, `Learner learner(model, optimizer,
// lambda, options)` and `Learner learner(model, train_lambda, valid_lambda, options)` deduce the
// model's type; the batch type is data::Batch unless given (Learner<M, MyBatch>).
template <class M, class O, class S, class F>
Learner(M, std::unique_ptr<O>, std::unique_ptr<S>, F, LearnerOptions = {}) -> Learner<M>;
template <class M, class O, class F>
Learner(M, std::unique_ptr<O>, std::nullptr_t, F, LearnerOptions = {}) -> Learner<M>;
template <class M, class O, class F>
Learner(M, std::unique_ptr<O>, F, LearnerOptions = {}) -> Learner<M>;
template <class M, class T, class V>
Learner(M, T, V, LearnerOptions = {}) -> Learner<M>;

}  // namespace kiln::train
