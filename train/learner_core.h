// The type-free half of the Learner (train/learner.h): options, metrics, history, dashboard,
// checkpoints, resume, early stopping, callbacks and Ctrl-C. The template half runs the loops over
// the model's own type and calls in here between steps.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/io/checkpoint.h"
#include "kiln/nn/module.h"
#include "kiln/optim/lr_scheduler.h"
#include "kiln/optim/optimizer.h"
#include "kiln/train/checkpoint_dir.h"
#include "kiln/train/dashboard.h"
#include "kiln/train/dashboard_ticker.h"
#include "kiln/train/distributed.h"
#include "kiln/train/interrupt.h"
#include "kiln/train/learner_state.h"
#include "kiln/train/metric_history.h"
#include "kiln/train/metrics.h"
#include "kiln/train/step.h"

namespace kiln::train {

enum class Phase { train, valid };

// Stop when a validation metric has not improved by min_delta for `patience` epochs.
struct EarlyStopping {
  std::string metric = "loss";
  std::int64_t patience = 3;
  double min_delta = 0.0;
};

struct LearnerOptions {
  std::int64_t epochs = 1;
  // Checkpoints (empty: none): after every `checkpoint_every` epochs and on Ctrl-C; the newest
  // `keep_checkpoints` stay. With `resume`, fit() starts from the newest one there.
  std::filesystem::path checkpoint_dir{};
  std::int64_t checkpoint_every = 1;
  std::int64_t keep_checkpoints = 2;
  bool resume = true;
  std::optional<EarlyStopping> early_stopping{};
  // The schedule steps after every update (every batch, or every accumulate_grad_batches), or
  // (false) after every epoch, with the validation loss as its metric (ReduceLrOnPlateau).
  bool schedule_per_batch = true;
  // The update of a step that returns its loss (a full-control step does its own): the gradients
  // of this many batches are summed and the optimizer steps once with their mean (see
  // train/gradient_update.h); the optimizer and a per-batch schedule step once per group, and the
  // epoch's last group may be shorter. A Ctrl-C finishes the group it comes in.
  std::int64_t accumulate_grad_batches = 1;
  // Clipping of the (accumulated) gradients before each step: by their total norm
  // (optim::clip_grad_norm with clip_norm_type), by value (optim::clip_grad_value), or both (value
  // first).
  std::optional<double> clip_grad_norm{};
  double clip_norm_type = 2.0;
  std::optional<double> clip_grad_value{};
  // A loss-returning step on data::Batch without accumulation is recorded once per batch shape
  // (forward, backward, clipping and the update: optim::RecordedStep) and replayed as one message
  // a batch, with the same results bit for bit (Dropout's masks included). Off: every batch steps
  // eagerly, as it also does when the step cannot be recorded (it reads a value, the optimizer
  // is not recordable). The step function then runs once per batch shape, not once per batch:
  // turn this off for a step that does more than ops (counts its calls, requests a stop).
  bool record_steps = true;
  std::filesystem::path report{};  // the HTML report written when the run ends (empty: none)
  std::string name = "training";
  DashboardMode dashboard = DashboardMode::automatic;
  bool handle_ctrl_c = true;
  // How many steps the loop may run ahead of the device: before step k+1 is submitted, step
  // k+1-steps_ahead has run. Submitting never waits otherwise, so without this bound a loop on a
  // fast host queued hundreds of steps (their batches with them), and Ctrl-C, the dashboard and
  // every read waited behind all of them. Two keeps the device busy while the host prepares the
  // next step; 0 turns the bound off (the engine's own flow control still applies).
  std::int64_t steps_ahead = 2;
  // Data-parallel training on several processes (train/distributed.h; dist::data_parallel makes
  // one). Null: this process alone.
  std::shared_ptr<DistributedTraining> distributed{};
};

struct FitResult {
  Progress stopped_at;          // epochs (and batches) done
  bool interrupted = false;     // by Ctrl-C (a checkpoint was written when there is a folder)
  bool stopped_early = false;   // by EarlyStopping
  bool stopped_by_callback = false;  // an on_epoch_end callback set EpochEnd::stop
  std::optional<std::filesystem::path> checkpoint{};  // the last one written
  std::optional<std::filesystem::path> report{};
};

class LearnerCore {
 public:
  // Without a schedule, a constant one at the optimizer's own learning rate. Without an optimizer
  // (the full-control step's form), neither: the step updates the model itself.
  LearnerCore(std::unique_ptr<optim::Optimizer> optimizer, std::unique_ptr<optim::LrScheduler> schedule,
              LearnerOptions options);
  ~LearnerCore();
  LearnerCore(LearnerCore&&) noexcept;
  LearnerCore& operator=(LearnerCore&&) noexcept;

  void add_metric(std::unique_ptr<Metric> metric);
  void on_step_end(std::function<void(const StepEnd&)> fn);
  void on_epoch_end(std::function<void(EpochEnd&)> fn);
  // States the checkpoints save and a resume loads beside the Learner's own (a full-control
  // step's optimizers), under "<name>/". They must outlive the Learner's runs.
  void save_state(std::string name, optim::Optimizer& optimizer);
  void save_state(std::string name, optim::LrScheduler& schedule);
  // The loss-returning form's (the full-control form has none).
  bool has_optimizer() const { return optimizer_ != nullptr; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  optim::LrScheduler& schedule() { return *schedule_; }
  const LearnerOptions& options() const { return options_; }
  // A copy of the metrics recorded so far (the dashboard keeps them).
  MetricHistory history() const { return dashboard_->history(); }

  // Resumes from the newest checkpoint when asked (loading it into `model`; a damaged one is
  // skipped, with a warning, for the one before it); returns where to start. A checkpoint written
  // during validation is at batch train_batches: the epoch's training is done, its validation and
  // end (schedule, early stopping) are still to come.
  // `train_batch_size`: the training loader's batch size (0: unknown), which places a checkpoint
  // in the epoch's data for a run with another number of processes or batch size.
  Progress begin_run(nn::Module& model, std::int64_t train_batches, std::int64_t valid_batches,
                     std::int64_t train_batch_size = 0);
  void begin_phase(Phase phase, std::int64_t epoch);
  // Whether the training batch at `batch_index` (0-based in its epoch) ends a group of
  // accumulate_grad_batches: the optimizer steps after it.
  bool ends_group(std::int64_t batch_index) const;
  // `updated`: the batch ended an update (the optimizer and a per-batch schedule step).
  void after_train_step(const StepOutput& out, bool updated);
  void after_valid_step(const StepOutput& out);
  void end_phase();
  // After an epoch: schedule (per epoch), early stopping, checkpoint. True: stop.
  bool end_epoch(const nn::Module& model, Progress done);
  // With several processes, every rank learns whether any was interrupted (so all stop at once).
  bool stop_requested() {
    const bool local = interrupt_ && InterruptGuard::requested();
    return options_.distributed && interrupt_ ? options_.distributed->any(local) : local;
  }
  DistributedTraining* distributed() const { return options_.distributed.get(); }
  // Stops at `at` (for a Ctrl-C during validation: the epoch's training, at batch train_batches)
  // with a checkpoint that holds the epoch's training so far; a validation cut short is not
  // recorded.
  FitResult interrupted(const nn::Module& model, Progress at);
  FitResult end_run(const nn::Module& model, Progress at);

 private:
  struct PhaseState;
  void update_metrics(const StepOutput& out);
  // The running values for the dashboard, read without waiting: a reading is started every
  // kReadInterval and shown once the device has computed it.
  void start_reading(PhaseState& phase);
  void show_reading_if_ready(PhaseState& phase);
  // Marks the end of a step's submission and waits for the step steps_ahead before it.
  void bound_run_ahead();
  // Loads the newest readable checkpoint into `model` and the optimizer and schedule; returns
  // where it stands, or nothing when there is none.
  std::optional<Progress> resume(nn::Module& model, std::vector<std::string>& messages);
  PhaseSnapshot snapshot(const PhaseState& phase) const;
  MetricValues current_values(const PhaseState& phase) const;  // the running values (reads them)
  void restore(PhaseState& phase, const PhaseSnapshot& saved);
  // `train`: the epoch's training so far, for a checkpoint within an epoch.
  std::optional<std::filesystem::path> write_checkpoint(const nn::Module& model, Progress at, const PhaseState* train);
  bool should_stop_early(std::optional<double> value, bool on_valid);
  // The run's updates before `at`: a group per accumulate_grad_batches batches of each epoch.
  std::int64_t updates_before(Progress at) const;
  // How this run batches an epoch (recorded in its checkpoints).
  DataLayout layout() const {
    return {distributed() ? distributed()->world_size() : 1, train_batch_size_, train_batches_};
  }
  // The states of the optimizers and schedules (the Learner's own and save_state's), as a
  // checkpoint holds them; load_states throws kiln::Error when one is missing or wrong.
  io::TrainingState states_to_save(Progress at) const;
  void load_states(const io::TrainingState& saved);
  FitResult finish(const nn::Module& model, Progress at);

  std::unique_ptr<optim::Optimizer> optimizer_;  // none for a full-control step
  std::unique_ptr<optim::LrScheduler> schedule_;
  LearnerOptions options_;
  std::vector<std::pair<std::string, optim::Optimizer*>> saved_optimizers_;
  std::vector<std::pair<std::string, optim::LrScheduler*>> saved_schedules_;
  std::vector<std::function<void(const StepEnd&)>> on_step_end_;
  std::vector<std::function<void(EpochEnd&)>> on_epoch_end_;
  std::int64_t updates_ = 0;  // the run's optimizer steps so far
  std::vector<std::unique_ptr<Metric>> metrics_;  // loss first
  std::unique_ptr<Dashboard> dashboard_;
  std::optional<CheckpointDir> checkpoints_;
  std::unique_ptr<InterruptGuard> interrupt_;
  FitResult result_;
  std::unique_ptr<PhaseState> phase_;
  // The epoch's finished training phase, until the epoch ends: a Ctrl-C during validation saves it.
  std::unique_ptr<PhaseState> finished_train_;
  std::optional<PhaseSnapshot> resumed_train_;  // the checkpoint's epoch so far, for its first phase
  std::optional<Progress> last_written_;        // the checkpoint written last, not to write it twice
  std::array<MetricValues, 2> last_summary_{};  // this epoch's train and valid summaries
  std::int64_t train_batches_ = 0, valid_batches_ = 0;
  std::int64_t train_batch_size_ = 0;
  // The checkpoint this run resumed from when it was written by another layout in the middle of
  // an epoch: its batch number may exceed that of a later checkpoint of this run in the same
  // epoch, which holds more of the data (write_checkpoint removes it then).
  std::optional<std::pair<Progress, std::filesystem::path>> resumed_other_layout_;
  Device device_ = Device::cpu();  // the model's: its memory is reported
  // Early stopping: the best value of its metric so far and the epochs since.
  std::optional<double> best_;
  std::int64_t since_best_ = 0;
  std::chrono::steady_clock::time_point started_{};
  std::deque<Future<void>> steps_in_flight_;  // a sync after each step not yet waited for
  std::unique_ptr<DashboardTicker> ticker_;    // while a run is on, with a dashboard
};

}  // namespace kiln::train
