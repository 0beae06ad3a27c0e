#include "kiln/train/learner_core.h"

#include <cmath>
#include <utility>

#include "kiln/io/io.h"
#include "kiln/train/html_report.h"
#include "kiln/train/metric_format.h"
#include "kiln/train/metric_history_file.h"
#include "kiln/train/named_states.h"
#include "kiln/train/process_memory.h"
#include "kiln/base/error.h"

namespace kiln::train {

namespace {
using Clock = std::chrono::steady_clock;

// How often the running metric values are read for the dashboard: a few times a second, not
// every step (each read is a message, and a cut in the step's batch).
constexpr auto kReadInterval = std::chrono::milliseconds(250);
// How often the view is redrawn while the training thread waits (DashboardTicker).
constexpr auto kTickInterval = std::chrono::milliseconds(200);

}  // namespace

// The phase being run: its metrics (fresh copies), counts and when the values were last read.
struct LearnerCore::PhaseState {
  Phase phase = Phase::train;
  std::int64_t epoch = 0;  // 0-based
  std::vector<std::unique_ptr<Metric>> metrics;
  std::int64_t batches = 0, items = 0;
  Clock::time_point started{}, last_read{};
  // A reading of the running values under way: each metric's, and the counts they are as of.
  struct Reading {
    std::vector<std::pair<std::string, MetricReading>> values;
    double lr = 0;
    std::int64_t batches = 0, items = 0;
  };
  std::optional<Reading> reading;
  // What a resumed phase carried over from its checkpoint: the dashboard's items per second count
  // this run's items only, the summary's the whole phase's.
  std::int64_t items_before = 0;
  double seconds_before = 0;

  double seconds() const { return seconds_before + std::chrono::duration<double>(Clock::now() - started).count(); }
};

LearnerCore::LearnerCore(std::unique_ptr<optim::Optimizer> optimizer, std::unique_ptr<optim::LrScheduler> schedule,
                         LearnerOptions options)
    : optimizer_(std::move(optimizer)), schedule_(std::move(schedule)), options_(std::move(options)) {
  KILN_CHECK(optimizer_ || !schedule_, "Learner",
             "a schedule without an optimizer: a full-control step steps its own optimizers and schedules");
  // The optimizer's own learning rate, as the user gave it in its options.
  if (optimizer_ && !schedule_) schedule_ = std::make_unique<optim::ConstantLr>(optimizer_->lr());
  KILN_CHECK(options_.epochs >= 1, "Learner", "epochs must be at least 1, got " + std::to_string(options_.epochs));
  KILN_CHECK(options_.steps_ahead >= 0, "Learner", "steps_ahead must not be negative, got " + std::to_string(options_.steps_ahead));
  KILN_CHECK(options_.checkpoint_every >= 1, "Learner",
             "checkpoint_every must be at least 1, got " + std::to_string(options_.checkpoint_every));
  KILN_CHECK(options_.accumulate_grad_batches >= 1, "Learner",
             "accumulate_grad_batches must be at least 1, got " + std::to_string(options_.accumulate_grad_batches));
  KILN_CHECK(!options_.clip_grad_norm || *options_.clip_grad_norm > 0, "Learner",
             "clip_grad_norm must be positive, got " + std::to_string(options_.clip_grad_norm.value_or(0)));
  KILN_CHECK(!options_.clip_grad_value || *options_.clip_grad_value > 0, "Learner",
             "clip_grad_value must be positive, got " + std::to_string(options_.clip_grad_value.value_or(0)));
  const bool default_update =
      options_.accumulate_grad_batches == 1 && !options_.clip_grad_norm && !options_.clip_grad_value;
  KILN_CHECK(optimizer_ || default_update, "Learner",
             "accumulate_grad_batches and clip_grad_norm/clip_grad_value apply to a step that returns its loss; a "
             "full-control step accumulates and clips its gradients itself");
  KILN_CHECK(!schedule_ || !schedule_->needs_metric() || !options_.schedule_per_batch, "Learner",
             schedule_->name() + " steps on a metric: set schedule_per_batch = false (it then gets the validation loss)");
  metrics_.push_back(std::make_unique<LossMetric>());
  DashboardOptions d;
  // One dashboard, one report and one set of checkpoints: rank 0's.
  const bool main_rank = !options_.distributed || options_.distributed->is_main();
  d.mode = main_rank ? options_.dashboard : DashboardMode::off;
  if (!main_rank) options_.report.clear();
  dashboard_ = std::make_unique<Dashboard>(d);
  if (!options_.checkpoint_dir.empty()) checkpoints_.emplace(options_.checkpoint_dir, options_.keep_checkpoints);
}

LearnerCore::~LearnerCore() = default;
LearnerCore::LearnerCore(LearnerCore&&) noexcept = default;
LearnerCore& LearnerCore::operator=(LearnerCore&&) noexcept = default;

void LearnerCore::add_metric(std::unique_ptr<Metric> metric) {
  KILN_CHECK(metric != nullptr, "Learner", "add_metric: the metric is null");
  for (const auto& m : metrics_)
    KILN_CHECK(m->name() != metric->name(), "Learner", "add_metric: a metric named '" + metric->name() + "' is there already");
  dashboard_->set_better(metric->name(), metric->higher_is_better() ? Better::higher : Better::lower);
  metrics_.push_back(std::move(metric));
}

void LearnerCore::on_step_end(std::function<void(const StepEnd&)> fn) {
  KILN_CHECK(static_cast<bool>(fn), "Learner", "on_step_end: the callback is empty");
  on_step_end_.push_back(std::move(fn));
}

void LearnerCore::on_epoch_end(std::function<void(EpochEnd&)> fn) {
  KILN_CHECK(static_cast<bool>(fn), "Learner", "on_epoch_end: the callback is empty");
  on_epoch_end_.push_back(std::move(fn));
}

namespace {
template <class T>
std::vector<std::string> names_of(const std::vector<std::pair<std::string, T*>>& saved) {
  std::vector<std::string> names;
  for (const auto& [name, state] : saved) names.push_back(name);
  return names;
}
}  // namespace

void LearnerCore::save_state(std::string name, optim::Optimizer& optimizer) {
  check_state_name(name, names_of(saved_optimizers_));
  saved_optimizers_.emplace_back(std::move(name), &optimizer);
}

void LearnerCore::save_state(std::string name, optim::LrScheduler& schedule) {
  check_state_name(name, names_of(saved_schedules_));
  saved_schedules_.emplace_back(std::move(name), &schedule);
}

io::TrainingState LearnerCore::states_to_save(Progress at) const {
  io::TrainingState s{optimizer_ ? optimizer_->state() : optim::State{},
                      schedule_ ? schedule_->state() : optim::State{},
                      at.epoch * train_batches_ + at.batch, default_generator()};
  for (const auto& [name, optimizer] : saved_optimizers_) add_named_state(s.optimizer, name, optimizer->state());
  for (const auto& [name, schedule] : saved_schedules_) add_named_state(s.scheduler, name, schedule->state());
  return s;
}

void LearnerCore::load_states(const io::TrainingState& saved) {
  if (optimizer_) optimizer_->load_state(unnamed_state(saved.optimizer, names_of(saved_optimizers_)));
  if (schedule_) schedule_->load_state(unnamed_state(saved.scheduler, names_of(saved_schedules_)));
  // An optimizer's state always holds its step count, a schedule's its kind: none is a state the
  // checkpoint does not have (one saved since the checkpoint was written).
  for (const auto& [name, optimizer] : saved_optimizers_) {
    const optim::State part = named_state(saved.optimizer, name);
    KILN_CHECK(!part.empty(), "Learner", "the checkpoint holds no state for the optimizer '" + name + "'");
    optimizer->load_state(part);
  }
  for (const auto& [name, schedule] : saved_schedules_) {
    const optim::State part = named_state(saved.scheduler, name);
    KILN_CHECK(!part.empty(), "Learner", "the checkpoint holds no state for the schedule '" + name + "'");
    schedule->load_state(part);
  }
}

std::optional<Progress> LearnerCore::resume(nn::Module& model, std::vector<std::string>& messages) {
  // Rank 0 clears what an interrupted write left, then every rank reads the same folder.
  const bool main_rank = !distributed() || distributed()->is_main();
  const std::vector<std::string> removed = main_rank ? checkpoints_->clean_up() : std::vector<std::string>{};
  if (distributed()) distributed()->barrier();
  if (!removed.empty()) {
    std::string names;
    for (const std::string& name : removed) names += (names.empty() ? "" : ", ") + name;
    messages.push_back("removed what an interrupted checkpoint left in " + checkpoints_->path().string() + ": " +
                       names);
  }
  const auto all = checkpoints_->list();
  std::vector<std::string> damaged;  // "<file> (<why>)", newest first
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const auto& [written_at, file] = *it;
    Progress at = written_at;
    std::optional<LearnerState> state;
    io::TrainingState s;
    std::optional<MetricHistory> history;
    try {
      // Everything is read and checked before the model changes (load_checkpoint's own promise).
      if (const std::optional<std::filesystem::path> state_file = CheckpointDir::state_for(file)) {
        state = load_learner_state(*state_file);
        check_file_sizes(*state, *state_file);
        KILN_CHECK(state->at == at && (!state->train || state->train->batches == at.batch), "Learner",
                   state_file->string() + " is not the state of the checkpoint beside it");
      }
      const std::filesystem::path history_file = CheckpointDir::history_for(file);
      if (state || std::filesystem::exists(history_file)) history = load_history(history_file);
      s = io::load_checkpoint(file, model);
      load_states(s);
    } catch (const std::exception& e) {
      damaged.push_back(file.string() + " (" + e.what() + ")");
      continue;
    }
    if (state && state->layout.recorded() && !state->layout.same_steps(layout())) {
      // Written by another number of processes or batch size: the same sample of the epoch.
      at = resume_point(*state, layout());
      if (at.batch > 0) resumed_other_layout_.emplace(written_at, file);
      messages.push_back(file.string() + " was written by " + std::to_string(state->layout.world_size) +
                         " process(es) with batches of " + std::to_string(state->layout.batch_size) + "; resuming at " +
                         "the same sample of epoch " + std::to_string(at.epoch + 1) + ", batch " +
                         std::to_string(at.batch) + " of this run's " + std::to_string(train_batches_));
    } else {
      KILN_CHECK(s.step == at.epoch * train_batches_ + at.batch, "Learner",
                 file.string() + " was written at step " + std::to_string(s.step) + ", which is not epoch " +
                     std::to_string(at.epoch) + " batch " + std::to_string(at.batch) + " of this loader (" +
                     std::to_string(train_batches_) + " batches an epoch)");
    }
    if (s.generator) default_generator() = *s.generator;
    if (state) {
      best_ = state->best;
      since_best_ = state->since_best;
      if (at.batch > 0) resumed_train_ = std::move(state->train);
    }
    if (history) dashboard_->restore_history(std::move(*history));
    for (const std::string& d : damaged)
      messages.push_back("warning: checkpoint " + d + " cannot be read: resuming from " + file.string() + " instead");
    result_.checkpoint = file;
    return at;
  }
  KILN_CHECK(damaged.empty(), "Learner",
             "no checkpoint in " + checkpoints_->path().string() + " can be read; the newest: " + damaged.front());
  return std::nullopt;
}

Progress LearnerCore::begin_run(nn::Module& model, std::int64_t train_batches, std::int64_t valid_batches,
                                std::int64_t train_batch_size) {
  train_batches_ = train_batches;
  valid_batches_ = valid_batches;
  train_batch_size_ = train_batch_size;
  resumed_other_layout_.reset();
  result_ = FitResult{};
  best_.reset();
  since_best_ = 0;
  resumed_train_.reset();
  finished_train_.reset();
  last_written_.reset();
  const std::vector<Tensor> params = model.parameters();
  device_ = params.empty() ? Device::cpu() : params.front().device();
  if (options_.handle_ctrl_c) interrupt_ = std::make_unique<InterruptGuard>();
  Progress at;
  std::vector<std::string> messages;
  if (checkpoints_ && options_.resume)
    if (const std::optional<Progress> resumed = resume(model, messages)) at = *resumed;
  updates_ = updates_before(at);
  if (distributed()) distributed()->replicate(model);
  RunInfo run;
  run.title = options_.name;
  run.device = device_name(device_);
  // A full-control step's optimizers and schedules by the names they are saved under.
  std::string optimizers = optimizer_ ? optimizer_->name() : "";
  for (const auto& [name, optimizer] : saved_optimizers_)
    optimizers += (optimizers.empty() ? "" : ", ") + name + ": " + optimizer->name();
  std::string schedules = schedule_ ? schedule_->describe() : "";
  for (const auto& [name, schedule] : saved_schedules_)
    schedules += (schedules.empty() ? "" : ", ") + name + ": " + schedule->describe();
  run.settings = {{"model", model.type_name()},
                  {"parameters", std::to_string(model.parameter_count())},
                  {"optimizer", optimizers.empty() ? "the step's own" : optimizers},
                  {"schedule", schedules.empty() ? "the step's own" : schedules},
                  {"epochs", std::to_string(options_.epochs)},
                  {"batches per epoch", std::to_string(train_batches)}};
  if (options_.accumulate_grad_batches > 1)
    run.settings.emplace_back("gradients accumulated over",
                              std::to_string(options_.accumulate_grad_batches) + " batches");
  if (options_.clip_grad_norm)
    run.settings.emplace_back("gradients clipped to norm", format_metric_value(*options_.clip_grad_norm));
  if (options_.clip_grad_value)
    run.settings.emplace_back("gradients clipped to value", format_metric_value(*options_.clip_grad_value));
  if (checkpoints_) run.settings.emplace_back("checkpoints", checkpoints_->path().string());
  if (distributed()) run.settings.emplace_back("processes", std::to_string(distributed()->world_size()));
  // begin_run keeps the history the resume restored: the curves of the run so far.
  dashboard_->begin_run(run);
  if (dashboard_->mode() != DashboardMode::off) ticker_ = std::make_unique<DashboardTicker>(*dashboard_, kTickInterval);
  for (const std::string& m : messages) dashboard_->message(m);
  if (at.epoch > 0 || at.batch > 0)
    dashboard_->message("resumed from " + result_.checkpoint->string() + " (epoch " + std::to_string(at.epoch + 1) +
                        ", batch " + std::to_string(at.batch) + ")");
  started_ = Clock::now();
  return at;
}

void LearnerCore::begin_phase(Phase phase, std::int64_t epoch) {
  if (phase == Phase::train && distributed()) distributed()->begin_epoch(epoch);
  if (phase == Phase::train) dashboard_->begin_epoch(static_cast<int>(epoch + 1), static_cast<int>(options_.epochs));
  phase_ = std::make_unique<PhaseState>();
  phase_->phase = phase;
  phase_->epoch = epoch;
  for (const auto& m : metrics_) phase_->metrics.push_back(m->clone());
  phase_->started = phase_->last_read = Clock::now();
  dashboard_->begin_phase(phase == Phase::train ? Split::train : Split::valid,
                          phase == Phase::train ? train_batches_ : valid_batches_);
  if (phase == Phase::train && resumed_train_) {
    restore(*phase_, *resumed_train_);
    resumed_train_.reset();
  }
}

PhaseSnapshot LearnerCore::snapshot(const PhaseState& phase) const {
  PhaseSnapshot saved{phase.batches, phase.items, phase.seconds(), {}};
  for (const auto& m : phase.metrics) saved.metrics.emplace_back(m->name(), m->state());
  return saved;
}

void LearnerCore::restore(PhaseState& phase, const PhaseSnapshot& saved) {
  for (const auto& m : phase.metrics)
    for (const auto& [name, state] : saved.metrics)
      if (name == m->name() && state) m->load_state(*state, device_);
  phase.batches = saved.batches;
  phase.items = phase.items_before = saved.items;
  phase.seconds_before = saved.seconds;
  // The progress bar and the curve go on from the batch the checkpoint was written at.
  dashboard_->update(phase.batches, 0, current_values(phase));
}

MetricValues LearnerCore::current_values(const PhaseState& phase) const {
  MetricValues values;
  for (const auto& m : phase.metrics) values.push_back({m->name(), m->value()});
  if (phase.phase == Phase::train && schedule_) values.push_back({"lr", schedule_->lr()});
  return values;
}

void LearnerCore::update_metrics(const StepOutput& out) {
  PhaseState& phase = *phase_;
  for (const auto& m : phase.metrics) m->update(out);
  ++phase.batches;
  phase.items += out.items;
  show_reading_if_ready(phase);
  if (!phase.reading && Clock::now() - phase.last_read >= kReadInterval) start_reading(phase);
  // Every step moves the progress bar; the values follow when their reading is in.
  // (The dashboard shows items per second itself, from the counts.)
  dashboard_->progress(phase.batches, phase.items - phase.items_before);
}

void LearnerCore::start_reading(PhaseState& phase) {
  phase.last_read = Clock::now();
  PhaseState::Reading r;
  for (const auto& m : phase.metrics) r.values.emplace_back(m->name(), m->read());
  r.lr = schedule_ ? schedule_->lr() : 0.0;
  r.batches = phase.batches;
  r.items = phase.items - phase.items_before;
  phase.reading = std::move(r);
}

void LearnerCore::show_reading_if_ready(PhaseState& phase) {
  if (!phase.reading) return;
  for (auto& [name, value] : phase.reading->values)
    if (!value.ready()) return;
  MetricValues values;
  for (auto& [name, value] : phase.reading->values) values.push_back({name, value.get()});
  if (phase.phase == Phase::train && schedule_) values.push_back({"lr", phase.reading->lr});
  dashboard_->update(phase.reading->batches, phase.reading->items, values);
  dashboard_->set_memory(resident_mib().value_or(0),
                         static_cast<double>(memory_stats(device_).bytes_in_use) / (1 << 20));
  phase.reading.reset();
}

void LearnerCore::bound_run_ahead() {
  if (options_.steps_ahead <= 0) return;
  steps_in_flight_.push_back(sync(device_));
  while (static_cast<std::int64_t>(steps_in_flight_.size()) > options_.steps_ahead) {
    Future<void> oldest = std::move(steps_in_flight_.front());
    steps_in_flight_.pop_front();
    oldest.get();  // rethrows a failure of that step's work
  }
}

bool LearnerCore::ends_group(std::int64_t batch_index) const {
  return (batch_index + 1) % options_.accumulate_grad_batches == 0 || batch_index + 1 == train_batches_;
}

std::int64_t LearnerCore::updates_before(Progress at) const {
  const std::int64_t n = options_.accumulate_grad_batches;
  return at.epoch * ((train_batches_ + n - 1) / n) + (at.batch + n - 1) / n;
}

void LearnerCore::after_train_step(const StepOutput& out, bool updated) {
  bound_run_ahead();
  update_metrics(out);
  if (updated) {
    ++updates_;
    if (options_.schedule_per_batch && schedule_) schedule_->step();
  }
  const StepEnd end{.epoch = phase_->epoch + 1, .batch = phase_->batches, .step = updates_, .updated = updated,
                    .output = out};
  for (const auto& fn : on_step_end_) fn(end);
}

void LearnerCore::after_valid_step(const StepOutput& out) {
  bound_run_ahead();
  update_metrics(out);
}

void LearnerCore::end_phase() {
  steps_in_flight_.clear();  // the summary below reads the metrics: it waits for every step
  MetricValues summary;
  // With several processes: the mean of the ranks' values (each saw its shard of the epoch).
  for (const auto& m : phase_->metrics)
    summary.push_back({m->name(), distributed() ? distributed()->mean(m->value()) : m->value()});
  // The phase's final counts (updates in between are throttled).
  dashboard_->update(phase_->batches, phase_->items - phase_->items_before, summary);
  const double seconds = phase_->seconds();
  if (phase_->phase == Phase::train) {
    if (schedule_) summary.push_back({"lr", schedule_->lr()});
    const MemoryStats mem = memory_stats(device_);  // the model's device
    summary.push_back({"memory MiB", static_cast<double>(mem.peak_in_use) / (1 << 20)});
    // The process's peak as the system counts it (loader, host copies, code): what `top` shows.
    if (const std::optional<double> rss = peak_resident_mib()) summary.push_back({"peak rss MiB", *rss});
  }
  const double items_per_s = seconds > 0 ? static_cast<double>(phase_->items) / seconds : 0;
  if (distributed()) {
    const double all = distributed()->sum(items_per_s);  // every rank takes part, whatever its clock
    if (seconds > 0) summary.push_back({"items/s", all});
  } else if (seconds > 0) {
    summary.push_back({"items/s", items_per_s});
  }
  dashboard_->end_phase(summary);
  // The last phase's values stay for end_epoch (early stopping, the per-epoch schedule).
  last_summary_[phase_->phase == Phase::train ? 0 : 1] = std::move(summary);
  if (phase_->phase == Phase::train) finished_train_ = std::move(phase_);
  phase_.reset();
}

bool LearnerCore::end_epoch(const nn::Module& model, Progress done) {
  finished_train_.reset();
  // This epoch's summaries: validation's when there was a validation pass, else training's.
  const std::array<MetricValues, 2> summaries = std::exchange(last_summary_, {});
  const bool on_valid = !summaries[1].empty();
  auto find = [&](const std::string& name) -> std::optional<double> {
    for (const MetricValue& v : summaries[on_valid ? 1 : 0])
      if (v.name == name) return v.value;
    return std::nullopt;
  };
  if (!options_.schedule_per_batch && schedule_) schedule_->step(find("loss").value_or(0.0));
  // Decided before the checkpoint, which keeps the best value and the count it leaves.
  bool stop = options_.early_stopping && should_stop_early(find(options_.early_stopping->metric), on_valid);
  EpochEnd end{.epoch = done.epoch, .step = updates_, .train = summaries[0], .valid = summaries[1]};
  for (const auto& fn : on_epoch_end_) fn(end);
  if (end.stop && !stop) {
    result_.stopped_by_callback = true;
    dashboard_->message("stopped by an on_epoch_end callback after epoch " + std::to_string(done.epoch));
  }
  stop = stop || end.stop;
  if (checkpoints_ && done.epoch % options_.checkpoint_every == 0)
    result_.checkpoint = write_checkpoint(model, done, nullptr);
  return stop;
}

bool LearnerCore::should_stop_early(std::optional<double> value, bool on_valid) {
  const EarlyStopping& es = *options_.early_stopping;
  KILN_CHECK(value.has_value(), "Learner", "early stopping watches '" + es.metric + "', which no metric reports");
  bool higher = false;
  for (const auto& m : metrics_)
    if (m->name() == es.metric) higher = m->higher_is_better();
  const bool improved =
      std::isfinite(*value) && (!best_ || (higher ? *value > *best_ + es.min_delta : *value < *best_ - es.min_delta));
  if (improved) {
    best_ = *value;
    since_best_ = 0;
    return false;
  }
  if (++since_best_ < es.patience) return false;
  result_.stopped_early = true;
  dashboard_->message("stopping early: " + std::string(on_valid ? "valid " : "train ") + es.metric +
                      " has not improved on " + format_metric_value(best_.value_or(NAN)) + " for " + std::to_string(since_best_) +
                      " epochs");
  return true;
}

std::optional<std::filesystem::path> LearnerCore::write_checkpoint(const nn::Module& model, Progress at,
                                                                   const PhaseState* train) {
  // Rank 0 writes; the others wait until it has, so that a rank that dies next finds it whole.
  if (distributed() && !distributed()->is_main()) {
    distributed()->barrier();
    last_written_ = at;
    return checkpoints_->folder_for(at) / CheckpointDir::kCheckpointFile;
  }
  LearnerState state{at, best_, since_best_, std::nullopt, {}, layout()};
  if (train && at.batch > 0) state.train = snapshot(*train);
  const MetricHistory history = dashboard_->history();
  auto record_size = [&](const std::filesystem::path& file) {
    state.file_sizes[file.filename().string()] = std::filesystem::file_size(file);
  };
  const std::filesystem::path file = checkpoints_->commit(
      at, {.checkpoint =
               [&](const std::filesystem::path& f) {
                 io::save_checkpoint(f, model, states_to_save(at));
                 record_size(f);
               },
           .history =
               [&](const std::filesystem::path& f) {
                 save_history(history, f);
                 record_size(f);
               },
           .state = [&](const std::filesystem::path& f) { save_learner_state(state, f); }});
  if (resumed_other_layout_ && at < resumed_other_layout_->first) {
    std::error_code ec;  // left behind if it will not go: the next resume would pick it, as before
    std::filesystem::remove_all(resumed_other_layout_->second.parent_path(), ec);
  }
  resumed_other_layout_.reset();
  checkpoints_->prune();
  last_written_ = at;
  if (distributed()) distributed()->barrier();
  return file;
}

FitResult LearnerCore::interrupted(const nn::Module& model, Progress at) {
  // The phase cut short ends without a summary: a partial validation is not the epoch's.
  if (phase_) dashboard_->end_phase({});
  // The epoch's training so far: the phase being run, or (during validation) the finished one.
  const std::unique_ptr<PhaseState> train =
      phase_ && phase_->phase == Phase::train ? std::move(phase_) : std::move(finished_train_);
  phase_.reset();
  result_.interrupted = true;
  if (checkpoints_ && last_written_ != at) {
    result_.checkpoint = write_checkpoint(model, at, train.get());
    dashboard_->message("checkpoint written: " + result_.checkpoint->string());
  }
  return finish(model, at);
}

FitResult LearnerCore::end_run(const nn::Module& model, Progress at) { return finish(model, at); }

FitResult LearnerCore::finish(const nn::Module&, Progress at) {
  result_.stopped_at = at;
  RunOutcome outcome;
  outcome.status = result_.interrupted ? "interrupted at epoch " + std::to_string(at.epoch + 1) + ", batch " + std::to_string(at.batch)
                   : result_.stopped_early ? "stopped early after epoch " + std::to_string(at.epoch)
                   : result_.stopped_by_callback ? "stopped by a callback after epoch " + std::to_string(at.epoch)
                                                 : "completed";
  outcome = dashboard_->end_run(outcome);
  if (!options_.report.empty()) {
    if (options_.report.has_parent_path()) std::filesystem::create_directories(options_.report.parent_path());
    write_html_report(options_.report, dashboard_->run(), outcome, dashboard_->history());
    result_.report = options_.report;
  }
  ticker_.reset();
  interrupt_.reset();
  phase_.reset();
  finished_train_.reset();
  resumed_train_.reset();
  steps_in_flight_.clear();
  return result_;
}

}  // namespace kiln::train
