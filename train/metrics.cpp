#include "kiln/train/metrics.h"

#include <limits>

#include "kiln/autograd/autograd.h"

namespace kiln::train {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Adds a 0-d value to a running total (the first value starts it), recording nothing.
void accumulate(Tensor& total, Tensor value) {
  const NoGradGuard no_grad;
  value = cast(detach(value), DType::f32);
  total = total.defined() ? add(std::move(total), std::move(value)) : std::move(value);
}

double mean(const Tensor& sum, std::int64_t items) {
  if (!sum.defined() || items == 0) return kNaN;
  return static_cast<double>(sum.item<float>().get()) / static_cast<double>(items);
}

MetricReading read_mean(const Tensor& sum, std::int64_t items) {
  if (!sum.defined() || items == 0) return MetricReading(kNaN);
  return MetricReading(sum.item<float>(), static_cast<double>(items));
}

// The state of the built-in metrics: one f32 total (while defined) and one count.
MetricState total_and_count(const Tensor& total, std::int64_t count) {
  MetricState s;
  if (total.defined()) s.totals.push_back(static_cast<double>(total.item<float>().get()));
  s.counts.push_back(count);
  return s;
}

void load_total_and_count(const std::string& metric, const MetricState& s, Device device, Tensor& total,
                          std::int64_t& count) {
  KILN_CHECK(s.totals.size() <= 1 && s.counts.size() == 1, metric,
             "a saved state of " + std::to_string(s.totals.size()) + " totals and " + std::to_string(s.counts.size()) +
                 " counts is not this metric's (at most one total and one count)");
  total = s.totals.empty() ? Tensor{} : scalar(s.totals[0], {DType::f32, device});
  count = s.counts[0];
}
}  // namespace

double MetricReading::get() {
  if (total_) {
    value_ = static_cast<double>(total_->get()) / divisor_;
    total_.reset();
  }
  return value_;
}

void Metric::load_state(const MetricState&, Device) {
  throw Error(name(), "this metric saves no state, so it has none to load");
}

void LossMetric::reset() {
  sum_ = Tensor{};
  items_ = 0;
}

void LossMetric::update(const StepOutput& step) {
  KILN_CHECK(step.loss.defined() && step.loss.numel() == 1, "LossMetric", "a step's loss must be one value");
  const std::int64_t items = std::max<std::int64_t>(step.items, 1);
  accumulate(sum_, mul(reshape(step.loss, {}), static_cast<double>(items)));
  items_ += items;
}

double LossMetric::value() const { return mean(sum_, items_); }
MetricReading LossMetric::read() const { return read_mean(sum_, items_); }

std::optional<MetricState> LossMetric::state() const { return total_and_count(sum_, items_); }

void LossMetric::load_state(const MetricState& state, Device device) {
  load_total_and_count(name(), state, device, sum_, items_);
}

TopKAccuracy::TopKAccuracy(std::int64_t k) : k_(k) {
  KILN_CHECK(k >= 1, "TopKAccuracy", "k must be at least 1, got " + std::to_string(k));
}

void TopKAccuracy::reset() {
  correct_ = Tensor{};
  items_ = 0;
}

void TopKAccuracy::update(const StepOutput& step) {
  const Tensor& out = step.outputs;
  const Tensor& labels = step.labels;
  KILN_CHECK(out.defined() && labels.defined() && out.rank() == 2 && labels.rank() == 1 && labels.size(0) == out.size(0),
             name(),
             "needs outputs [B, C] and labels [B], got " + (out.defined() ? out.shape().str() : std::string("none")) +
                 " and " + (labels.defined() ? labels.shape().str() : std::string("none")));
  KILN_CHECK(k_ <= out.size(1), name(), "k = " + std::to_string(k_) + " exceeds the " + std::to_string(out.size(1)) + " classes");
  const NoGradGuard no_grad;
  const Tensor scores = detach(out);
  Tensor hits;
  if (k_ == 1) {
    hits = sum(eq(argmax(scores, 1), labels));
  } else {
    // A label is in the top k when fewer than k scores beat its own (ties count for it).
    const Tensor own = gather(scores, 1, unsqueeze(labels, 1));
    hits = sum(lt(sum(gt(scores, own), {1}), static_cast<double>(k_)));
  }
  accumulate(correct_, std::move(hits));
  items_ += out.size(0);
}

double TopKAccuracy::value() const { return mean(correct_, items_); }
MetricReading TopKAccuracy::read() const { return read_mean(correct_, items_); }

std::optional<MetricState> TopKAccuracy::state() const { return total_and_count(correct_, items_); }

void TopKAccuracy::load_state(const MetricState& state, Device device) {
  load_total_and_count(name(), state, device, correct_, items_);
}

void LambdaMetric::reset() {
  sum_ = Tensor{};
  items_ = 0;
}

void LambdaMetric::update(const StepOutput& step) {
  const Tensor v = fn_(step);
  KILN_CHECK(v.defined() && v.numel() == 1, name_, "the metric's function must return one value");
  const std::int64_t items = std::max<std::int64_t>(step.items, 1);
  accumulate(sum_, mul(reshape(v, {}), static_cast<double>(items)));
  items_ += items;
}

double LambdaMetric::value() const { return mean(sum_, items_); }
MetricReading LambdaMetric::read() const { return read_mean(sum_, items_); }

std::optional<MetricState> LambdaMetric::state() const { return total_and_count(sum_, items_); }

void LambdaMetric::load_state(const MetricState& state, Device device) {
  load_total_and_count(name(), state, device, sum_, items_);
}

}  // namespace kiln::train
