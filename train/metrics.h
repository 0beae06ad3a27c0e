// Metrics a Learner reports for each phase (an epoch's training or validation): each sees every
// step's output and keeps its running totals as tensors on the device, so updating one never
// waits for the device; value() reads them (the dashboard does so a few times a second, the
// Learner once at the end of a phase).
//
// Built in: Loss (the mean of the steps' losses, weighted by their items), Accuracy, TopKAccuracy.
// A user metric derives from Metric or wraps a function of the step with LambdaMetric, which may
// read the step's extra tensors (StepOutput::extra) by name:
//
//   learner.add_metric(std::make_unique<train::LambdaMetric>("mae", /*higher_is_better=*/false,
//       [](const train::StepOutput& s) { return mean(abs(sub(s.get("prediction"), s.get("target")))); }));
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/engine/kiln.h"
#include "kiln/train/step.h"

namespace kiln::train {

// A metric's running totals as plain numbers: a checkpoint written mid-phase keeps them, so
// that the resumed phase's value covers the whole phase, not only the steps after the resume.
// The built-in metrics' totals are f32, which a double (and its JSON text) holds exactly.
struct MetricState {
  std::vector<double> totals{};       // empty before the first update
  std::vector<std::int64_t> counts{};
};

// A metric's running value being read: the device computes it while the training thread goes
// on; ready() says whether it is there, get() returns it (waiting if need be).
class MetricReading {
 public:
  explicit MetricReading(double value) : value_(value) {}  // known already
  MetricReading(Future<float> total, double divisor) : total_(std::move(total)), divisor_(divisor) {}
  bool ready() const { return !total_ || total_->ready(); }
  double get();

 private:
  std::optional<Future<float>> total_;
  double divisor_ = 1;
  double value_ = 0;
};

class Metric {
 public:
  virtual ~Metric() = default;
  virtual std::string name() const = 0;
  virtual bool higher_is_better() const = 0;
  virtual void reset() = 0;
  virtual void update(const StepOutput& step) = 0;
  // NaN before the first update.
  virtual double value() const = 0;
  // The value without waiting for it: the Learner reads its metrics so for the dashboard. The
  // default computes value() at once (waiting for the device); the built-in metrics start a
  // read of their running total and return.
  virtual MetricReading read() const { return MetricReading(value()); }
  virtual std::unique_ptr<Metric> clone() const = 0;
  // The running totals, or none for a metric that cannot save them (its resumed phase then
  // covers the steps after the resume). load_state puts the totals' tensors on `device`; it
  // throws kiln::Error on a state of another shape.
  virtual std::optional<MetricState> state() const { return std::nullopt; }
  virtual void load_state(const MetricState& state, Device device);
};

// Mean of the steps' losses, each weighted by its items.
class LossMetric final : public Metric {
 public:
  std::string name() const override { return "loss"; }
  bool higher_is_better() const override { return false; }
  void reset() override;
  void update(const StepOutput& step) override;
  double value() const override;
  MetricReading read() const override;
  std::unique_ptr<Metric> clone() const override { return std::make_unique<LossMetric>(); }
  std::optional<MetricState> state() const override;
  void load_state(const MetricState& state, Device device) override;

 private:
  Tensor sum_;  // of loss * items
  std::int64_t items_ = 0;
};

// The fraction of examples whose label is among the k highest outputs (k = 1: accuracy).
class TopKAccuracy final : public Metric {
 public:
  explicit TopKAccuracy(std::int64_t k = 1);
  std::string name() const override { return k_ == 1 ? "accuracy" : "top" + std::to_string(k_) + "_accuracy"; }
  bool higher_is_better() const override { return true; }
  void reset() override;
  void update(const StepOutput& step) override;
  double value() const override;
  MetricReading read() const override;
  std::unique_ptr<Metric> clone() const override { return std::make_unique<TopKAccuracy>(k_); }
  std::optional<MetricState> state() const override;
  void load_state(const MetricState& state, Device device) override;

 private:
  std::int64_t k_;
  Tensor correct_;
  std::int64_t items_ = 0;
};

inline std::unique_ptr<Metric> accuracy() { return std::make_unique<TopKAccuracy>(1); }
inline std::unique_ptr<Metric> top_k_accuracy(std::int64_t k) { return std::make_unique<TopKAccuracy>(k); }

// A metric from a function of each step: the mean of fn(step) (a 0-d tensor), weighted by items.
class LambdaMetric final : public Metric {
 public:
  LambdaMetric(std::string name, bool higher_is_better, std::function<Tensor(const StepOutput&)> fn)
      : name_(std::move(name)), higher_(higher_is_better), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  bool higher_is_better() const override { return higher_; }
  void reset() override;
  void update(const StepOutput& step) override;
  double value() const override;
  MetricReading read() const override;
  std::unique_ptr<Metric> clone() const override { return std::make_unique<LambdaMetric>(name_, higher_, fn_); }
  std::optional<MetricState> state() const override;
  void load_state(const MetricState& state, Device device) override;

 private:
  std::string name_;
  bool higher_;
  std::function<Tensor(const StepOutput&)> fn_;
  Tensor sum_;
  std::int64_t items_ = 0;
};

}  // namespace kiln::train
