// kiln::optim's learning-rate schedulers (optim/lr_scheduler.h) against PyTorch 1.13's
// (tests/data/gen_optim_schedulers.py): every case's lr and momentum sequence; then, on the same
// cases, that saving the state at any step and loading it into a fresh scheduler continues
// exactly as an uninterrupted run, that clones are independent; and every argument and state
// error.
//
// Tolerance: |kiln - torch| <= 1e-12 |torch|. torch computes the step, multi-step, exponential,
// linear and constant-factor schedules recursively (lr *= gamma at each milestone; LinearLR,
// and so SequentialLR's warmup, by a ratio of factors) where kiln uses torch's own closed forms:
// they differ by a few units in the last place (at most 9e-16 relative on these cases). Cosine
// annealing, warm restarts, OneCycle, Noam and the plateau rule follow torch's arithmetic term
// for term and agree to the bit here; the margin is for other libm builds of cos and pow.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/optim/lr_scheduler.h"
#include "support/expect_error.h"
#include "support/reference.h"

namespace kiln {
namespace {

using optim::LrScheduler;
using test::expect_error;
using test::Json;
using test::RefCase;
constexpr const char* kSchedulersFile = "optim_schedulers.json";
constexpr double kRtol = 1e-12;

optim::PlateauOptions plateau_options(const Json& s) {
  optim::PlateauOptions o;
  o.mode = s.at("mode") == "min" ? optim::PlateauMode::min : optim::PlateauMode::max;
  o.factor = s.at("factor");
  o.patience = s.at("patience");
  o.threshold = s.at("threshold");
  o.threshold_mode = s.at("threshold_mode") == "rel" ? optim::ThresholdMode::rel : optim::ThresholdMode::abs;
  o.cooldown = s.at("cooldown");
  o.min_lr = s.at("min_lr");
  o.eps = s.at("eps");
  return o;
}

optim::OneCycleOptions one_cycle_options(const Json& s) {
  optim::OneCycleOptions o;
  o.pct_start = s.at("pct_start");
  o.anneal_strategy = s.at("anneal_strategy") == "cos" ? optim::AnnealStrategy::cos : optim::AnnealStrategy::linear;
  o.cycle_momentum = s.at("cycle_momentum");
  o.base_momentum = s.at("base_momentum");
  o.max_momentum = s.at("max_momentum");
  o.div_factor = s.at("div_factor");
  o.final_div_factor = s.at("final_div_factor");
  o.three_phase = s.at("three_phase");
  return o;
}

// The kiln scheduler a case's "scheduler" describes (the generator's torch_scheduler, mirrored).
std::unique_ptr<LrScheduler> make_scheduler(const Json& s) {
  const std::string kind = s.at("kind");
  if (kind == "ConstantLr") return std::make_unique<optim::ConstantLr>(s.at("base_lr"));
  if (kind == "ConstantFactorLr")
    return std::make_unique<optim::ConstantFactorLr>(s.at("base_lr"), s.at("factor"), s.at("total_iters"));
  if (kind == "StepLr") return std::make_unique<optim::StepLr>(s.at("base_lr"), s.at("step_size"), s.at("gamma"));
  if (kind == "MultiStepLr")
    return std::make_unique<optim::MultiStepLr>(s.at("base_lr"), s.at("milestones").get<std::vector<std::int64_t>>(),
                                                s.at("gamma"));
  if (kind == "ExponentialLr") return std::make_unique<optim::ExponentialLr>(s.at("base_lr"), s.at("gamma"));
  if (kind == "LinearLr")
    return std::make_unique<optim::LinearLr>(s.at("base_lr"), s.at("start_factor"), s.at("end_factor"),
                                             s.at("total_iters"));
  if (kind == "CosineAnnealingLr")
    return std::make_unique<optim::CosineAnnealingLr>(s.at("base_lr"), s.at("t_max"), s.at("eta_min"));
  if (kind == "CosineAnnealingWarmRestarts")
    return std::make_unique<optim::CosineAnnealingWarmRestarts>(s.at("base_lr"), s.at("t_0"), s.at("t_mult"),
                                                                s.at("eta_min"));
  if (kind == "OneCycleLr")
    return std::make_unique<optim::OneCycleLr>(s.at("max_lr"), s.at("total_steps"), one_cycle_options(s));
  if (kind == "ReduceLrOnPlateau")
    return std::make_unique<optim::ReduceLrOnPlateau>(s.at("base_lr"), plateau_options(s));
  if (kind == "NoamLr") return std::make_unique<optim::NoamLr>(s.at("base_lr"), s.at("d_model"), s.at("warmup_steps"));
  if (kind == "LinearWarmup")
    return std::make_unique<optim::LinearWarmup>(*make_scheduler(s.at("then")), s.at("warmup_steps"),
                                                 s.at("start_factor"));
  throw std::runtime_error("no kiln scheduler for kind " + kind);
}

// What a case records: n + 1 lrs (and momenta) around n steps, with the metrics of the steps.
struct Recorded {
  std::vector<double> lrs, momenta, metrics;
};

Recorded recorded(const RefCase& c) {
  Recorded r;
  r.lrs = c.attrs.at("lrs").get<std::vector<double>>();
  if (c.attrs.contains("momenta")) r.momenta = c.attrs.at("momenta").get<std::vector<double>>();
  if (c.attrs.contains("metrics")) r.metrics = c.attrs.at("metrics").get<std::vector<double>>();
  return r;
}

std::size_t step_count(const Recorded& r) { return r.lrs.size() - 1; }

// Steps `s` as the case did: step(metric) where the case has metrics.
void step_as_recorded(LrScheduler& s, const Recorded& r) {
  const auto k = static_cast<std::size_t>(s.steps());
  if (r.metrics.empty())
    s.step();
  else
    s.step(r.metrics.at(k));
}

// Runs `s` to the case's last step, returning the lrs and momenta it gives from where it is.
Recorded run_to_end(LrScheduler& s, const Recorded& r) {
  Recorded out;
  for (;;) {
    out.lrs.push_back(s.lr());
    if (auto m = s.momentum()) out.momenta.push_back(*m);
    if (static_cast<std::size_t>(s.steps()) == step_count(r)) return out;
    step_as_recorded(s, r);
  }
}

::testing::AssertionResult close_to_torch(double got, double want) {
  if (std::abs(got - want) <= kRtol * std::abs(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "kiln " << got << " vs torch " << want << " (difference " << got - want
                                       << ")";
}

// Every case of `kind`: at least `min_cases` of them, each sequence matching torch's.
void expect_cases_match_torch(const std::string& kind, std::size_t min_cases) {
  const std::vector<RefCase> cases = test::cases_for(kSchedulersFile, kind);
  ASSERT_GE(cases.size(), min_cases) << kind;
  for (const RefCase& c : cases) {
    const Recorded want = recorded(c);
    ASSERT_GE(want.lrs.size(), 2u) << c.name;
    const std::unique_ptr<LrScheduler> s = make_scheduler(c.attrs.at("scheduler"));
    EXPECT_EQ(s->name(), kind) << c.name;
    for (std::size_t k = 0; k < want.lrs.size(); ++k) {
      ASSERT_EQ(s->steps(), static_cast<std::int64_t>(k)) << c.name;
      EXPECT_TRUE(close_to_torch(s->lr(), want.lrs[k])) << c.name << " lr at step " << k;
      if (want.momenta.empty()) {
        EXPECT_FALSE(s->momentum().has_value()) << c.name << " step " << k;
      } else {
        ASSERT_TRUE(s->momentum().has_value()) << c.name << " step " << k;
        EXPECT_TRUE(close_to_torch(*s->momentum(), want.momenta[k])) << c.name << " momentum at step " << k;
      }
      if (k < step_count(want)) step_as_recorded(*s, want);
    }
    if (c.attrs.contains("raises_after"))
      expect_error([&] { s->step(); }, kind, {"tried to step", std::to_string(step_count(want) + 1), "total_steps"});
  }
}

TEST(LrScheduler, ConstantMatchesTorch) { expect_cases_match_torch("ConstantLr", 1); }
TEST(LrScheduler, ConstantFactorMatchesTorch) { expect_cases_match_torch("ConstantFactorLr", 4); }
TEST(LrScheduler, StepMatchesTorch) { expect_cases_match_torch("StepLr", 4); }
TEST(LrScheduler, MultiStepMatchesTorch) { expect_cases_match_torch("MultiStepLr", 3); }
TEST(LrScheduler, ExponentialMatchesTorch) { expect_cases_match_torch("ExponentialLr", 3); }
TEST(LrScheduler, LinearMatchesTorch) { expect_cases_match_torch("LinearLr", 6); }
TEST(LrScheduler, CosineAnnealingMatchesTorch) { expect_cases_match_torch("CosineAnnealingLr", 6); }
TEST(LrScheduler, WarmRestartsMatchTorch) { expect_cases_match_torch("CosineAnnealingWarmRestarts", 5); }
TEST(LrScheduler, OneCycleMatchesTorch) { expect_cases_match_torch("OneCycleLr", 8); }
TEST(LrScheduler, ReduceOnPlateauMatchesTorch) { expect_cases_match_torch("ReduceLrOnPlateau", 8); }
TEST(LrScheduler, NoamMatchesTorch) { expect_cases_match_torch("NoamLr", 3); }
TEST(LrScheduler, LinearWarmupMatchesTorch) { expect_cases_match_torch("LinearWarmup", 9); }

TEST(LrScheduler, StateSavedAtAnyStepResumesExactly) {
  const std::vector<RefCase> cases = test::load_cases(kSchedulersFile);
  ASSERT_GE(cases.size(), 50u);
  for (const RefCase& c : cases) {
    const Recorded r = recorded(c);
    const std::unique_ptr<LrScheduler> whole = make_scheduler(c.attrs.at("scheduler"));
    const Recorded uninterrupted = run_to_end(*whole, r);
    for (std::size_t split = 0; split <= step_count(r); ++split) {
      const std::unique_ptr<LrScheduler> first = make_scheduler(c.attrs.at("scheduler"));
      while (static_cast<std::size_t>(first->steps()) < split) step_as_recorded(*first, r);
      const optim::State saved = first->state();
      EXPECT_EQ(saved.numbers.at("step"), static_cast<double>(split)) << c.name;

      const std::unique_ptr<LrScheduler> resumed = make_scheduler(c.attrs.at("scheduler"));
      resumed->load_state(saved);
      ASSERT_EQ(resumed->state().numbers, saved.numbers) << c.name << " split at " << split;
      const Recorded rest = run_to_end(*resumed, r);
      // Exact: the resumed run gives the very doubles of the uninterrupted one.
      const std::vector<double> want_lrs(uninterrupted.lrs.begin() + static_cast<std::ptrdiff_t>(split),
                                         uninterrupted.lrs.end());
      EXPECT_EQ(rest.lrs, want_lrs) << c.name << " split at " << split;
      if (!uninterrupted.momenta.empty()) {
        const std::vector<double> want_momenta(uninterrupted.momenta.begin() + static_cast<std::ptrdiff_t>(split),
                                               uninterrupted.momenta.end());
        EXPECT_EQ(rest.momenta, want_momenta) << c.name << " split at " << split;
      }
    }
  }
}

TEST(LrScheduler, ClonesAreIndependent) {
  const std::vector<RefCase> cases = test::load_cases(kSchedulersFile);
  ASSERT_GE(cases.size(), 50u);
  for (const RefCase& c : cases) {
    const Recorded r = recorded(c);
    const std::unique_ptr<LrScheduler> original = make_scheduler(c.attrs.at("scheduler"));
    const std::size_t middle = step_count(r) / 2;
    while (static_cast<std::size_t>(original->steps()) < middle) step_as_recorded(*original, r);
    const std::unique_ptr<LrScheduler> copy = original->clone();
    const optim::State at_middle = copy->state();
    const double lr_at_middle = copy->lr();

    const Recorded original_rest = run_to_end(*original, r);
    EXPECT_EQ(copy->steps(), static_cast<std::int64_t>(middle)) << c.name;
    EXPECT_EQ(copy->lr(), lr_at_middle) << c.name;
    EXPECT_EQ(copy->state().numbers, at_middle.numbers) << c.name;
    // The clone then walks the same road on its own.
    const Recorded copy_rest = run_to_end(*copy, r);
    EXPECT_EQ(copy_rest.lrs, original_rest.lrs) << c.name;
    EXPECT_EQ(copy_rest.momenta, original_rest.momenta) << c.name;
  }
}

TEST(LrScheduler, CopiedWarmupOwnsItsOwnSchedule) {
  optim::LinearWarmup warmup(optim::ReduceLrOnPlateau(0.1, {.factor = 0.5, .patience = 0}), 2, 0.5);
  for (int i = 0; i < 3; ++i) warmup.step(1.0);  // the plateau has seen one metric
  optim::LinearWarmup copy = warmup;
  copy.step(2.0);  // worse, patience 0: the copy's plateau halves its lr
  EXPECT_EQ(copy.lr(), 0.05);
  EXPECT_EQ(warmup.lr(), 0.1);
  EXPECT_EQ(warmup.then().steps(), 1);
  EXPECT_EQ(copy.then().steps(), 2);
  copy = warmup;  // assignment deep-copies too
  EXPECT_EQ(copy.lr(), 0.1);
  copy.step(2.0);
  EXPECT_EQ(warmup.lr(), 0.1);
}

TEST(LrScheduler, MetricIsIgnoredWhereNotNeeded) {
  optim::StepLr with_metric(0.1, 2, 0.5), without(0.1, 2, 0.5);
  for (int i = 0; i < 7; ++i) {
    with_metric.step(100.0 - i);
    without.step();
    EXPECT_EQ(with_metric.lr(), without.lr());
  }
  EXPECT_FALSE(without.needs_metric());
  EXPECT_TRUE(optim::ReduceLrOnPlateau(0.1).needs_metric());
  EXPECT_TRUE(optim::LinearWarmup(optim::ReduceLrOnPlateau(0.1), 3, 0.1).needs_metric());
}

TEST(LrScheduler, BaseLrNamesAndDescriptions) {
  const optim::OneCycleLr one_cycle(0.5, 100);
  EXPECT_EQ(one_cycle.base_lr(), 0.5 / 25.0);      // torch's initial_lr
  EXPECT_NEAR(one_cycle.lr(), 0.5 / 25.0, 1e-15);  // torch's cosine arithmetic, not exactly 0.02
  const optim::LinearWarmup warmup(optim::CosineAnnealingLr(0.1, 100), 10, 0.1);
  EXPECT_EQ(warmup.base_lr(), 0.1);
  EXPECT_EQ(warmup.name(), "LinearWarmup");
  EXPECT_EQ(warmup.describe(),
            "warmup_steps=10, start_factor=0.1, then CosineAnnealingLr(base_lr=0.1, t_max=100, eta_min=0)");
  EXPECT_EQ(optim::StepLr(0.1, 30).describe(), "base_lr=0.1, step_size=30, gamma=0.1");
  EXPECT_EQ(optim::MultiStepLr(0.1, {30, 80}).describe(), "base_lr=0.1, milestones=[30, 80], gamma=0.1");
  EXPECT_EQ(optim::ReduceLrOnPlateau(0.1).describe(),
            "base_lr=0.1, mode=min, factor=0.1, patience=10, threshold=0.0001, threshold_mode=rel, cooldown=0, "
            "min_lr=0, eps=1e-08");
  EXPECT_EQ(optim::NoamLr(2.0, 512, 4000).describe(), "base_lr=2, d_model=512, warmup_steps=4000");
}

// Every argument check: a kiln::Error from the scheduler that names the setting and the value.
TEST(LrScheduler, BadArgumentsAreErrors) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  expect_error([] { return optim::ConstantLr(-0.1); }, "ConstantLr", {"base_lr", "-0.1"});
  expect_error([&] { return optim::ConstantLr(nan); }, "ConstantLr", {"base_lr", "nan"});
  expect_error([&] { return optim::ConstantLr(inf); }, "ConstantLr", {"base_lr", "inf"});
  expect_error([] { return optim::ConstantFactorLr(0.1, 1.5); }, "ConstantFactorLr", {"factor", "1.5"});
  expect_error([] { return optim::ConstantFactorLr(0.1, -0.1); }, "ConstantFactorLr", {"factor", "-0.1"});
  expect_error([] { return optim::ConstantFactorLr(0.1, 0.5, 0); }, "ConstantFactorLr", {"total_iters", "0"});
  expect_error([] { return optim::StepLr(0.1, 0); }, "StepLr", {"step_size", "0"});
  expect_error([] { return optim::StepLr(0.1, -3); }, "StepLr", {"step_size", "-3"});
  expect_error([] { return optim::StepLr(0.1, 3, 0.0); }, "StepLr", {"gamma", "0"});
  expect_error([] { return optim::StepLr(0.1, 3, -0.5); }, "StepLr", {"gamma", "-0.5"});
  expect_error([&] { return optim::StepLr(0.1, 3, nan); }, "StepLr", {"gamma", "nan"});
  expect_error([] { return optim::StepLr(-1.0, 3); }, "StepLr", {"base_lr", "-1"});
  expect_error([] { return optim::StepLr(0.1, (std::int64_t{1} << 53) + 1); }, "StepLr", {"step_size", "2^53"});
  expect_error([] { return optim::MultiStepLr(0.1, {5, 3}); }, "MultiStepLr", {"increasing", "5", "3"});
  expect_error([] { return optim::MultiStepLr(0.1, {-1, 4}); }, "MultiStepLr", {"milestones[0]", "-1"});
  expect_error([] { return optim::MultiStepLr(0.1, {4}, 0.0); }, "MultiStepLr", {"gamma", "0"});
  expect_error([] { return optim::ExponentialLr(0.1, 0.0); }, "ExponentialLr", {"gamma", "0"});
  expect_error([] { return optim::ExponentialLr(0.1, -1.0); }, "ExponentialLr", {"gamma", "-1"});
  expect_error([&] { return optim::ExponentialLr(0.1, inf); }, "ExponentialLr", {"gamma", "inf"});
  expect_error([] { return optim::LinearLr(0.1, 1.5); }, "LinearLr", {"start_factor", "1.5"});
  expect_error([] { return optim::LinearLr(0.1, 0.5, -0.1); }, "LinearLr", {"end_factor", "-0.1"});
  expect_error([] { return optim::LinearLr(0.1, 0.5, 1.0, 0); }, "LinearLr", {"total_iters", "0"});
  expect_error([] { return optim::CosineAnnealingLr(0.1, 0); }, "CosineAnnealingLr", {"t_max", "0"});
  expect_error([] { return optim::CosineAnnealingLr(0.1, -5); }, "CosineAnnealingLr", {"t_max", "-5"});
  expect_error([] { return optim::CosineAnnealingLr(0.1, 5, -0.1); }, "CosineAnnealingLr", {"eta_min", "-0.1"});
  expect_error([] { return optim::CosineAnnealingWarmRestarts(0.1, 0); }, "CosineAnnealingWarmRestarts", {"t_0", "0"});
  expect_error([] { return optim::CosineAnnealingWarmRestarts(0.1, 5, 0); }, "CosineAnnealingWarmRestarts",
               {"t_mult", "0"});
  expect_error([] { return optim::CosineAnnealingWarmRestarts(0.1, 5, 1, -1.0); }, "CosineAnnealingWarmRestarts",
               {"eta_min", "-1"});
  expect_error([] { return optim::NoamLr(1.0, 0, 10); }, "NoamLr", {"d_model", "0"});
  expect_error([] { return optim::NoamLr(1.0, 512, 0); }, "NoamLr", {"warmup_steps", "0"});
  expect_error([] { return optim::NoamLr(-1.0, 512, 10); }, "NoamLr", {"base_lr", "-1"});
}

TEST(LrScheduler, BadOneCycleArgumentsAreErrors) {
  using optim::OneCycleLr;
  expect_error([] { return OneCycleLr(-0.1, 10); }, "OneCycleLr", {"max_lr", "-0.1"});
  expect_error([] { return OneCycleLr(0.1, 0); }, "OneCycleLr", {"total_steps", "0"});
  expect_error([] { return OneCycleLr(0.1, 10, {.pct_start = -0.1}); }, "OneCycleLr", {"pct_start", "-0.1"});
  expect_error([] { return OneCycleLr(0.1, 10, {.pct_start = 1.1}); }, "OneCycleLr", {"pct_start", "1.1"});
  expect_error([] { return OneCycleLr(0.1, 10, {.anneal_strategy = static_cast<optim::AnnealStrategy>(7)}); },
               "OneCycleLr", {"anneal_strategy", "7"});
  expect_error([] { return OneCycleLr(0.1, 10, {.div_factor = 0.0}); }, "OneCycleLr", {"div_factor", "0"});
  expect_error([] { return OneCycleLr(0.1, 10, {.final_div_factor = -1.0}); }, "OneCycleLr",
               {"final_div_factor", "-1"});
  expect_error([] { return OneCycleLr(0.1, 10, {.base_momentum = 1.5}); }, "OneCycleLr", {"base_momentum", "1.5"});
  expect_error([] { return OneCycleLr(0.1, 10, {.max_momentum = -0.1}); }, "OneCycleLr", {"max_momentum", "-0.1"});
  // Without momentum cycling the momenta are unused, so not checked.
  EXPECT_NO_THROW(OneCycleLr(0.1, 10, {.cycle_momentum = false, .max_momentum = -0.1}));
  // A phase of no length (pct_start * total_steps == 1, where torch divides by zero) is at its
  // end. The phase ends must be torch's rounded ones: a fused 0.1 * 10 - 1 would be 5.6e-17.
  const OneCycleLr peak_first(0.1, 10, {.pct_start = 0.1});
  EXPECT_NEAR(peak_first.lr(), 0.1, 1e-15);
  OneCycleLr two(0.1, 2);
  two.step();
  two.step();
  expect_error([&] { two.step(); }, "OneCycleLr", {"tried to step 3 times", "total_steps is 2"});
  EXPECT_EQ(two.steps(), 2);
}

TEST(LrScheduler, BadPlateauArgumentsAndMetricsAreErrors) {
  using optim::ReduceLrOnPlateau;
  expect_error([] { return ReduceLrOnPlateau(0.1, {.mode = static_cast<optim::PlateauMode>(5)}); }, "ReduceLrOnPlateau",
               {"mode", "5"});
  expect_error([] { return ReduceLrOnPlateau(0.1, {.threshold_mode = static_cast<optim::ThresholdMode>(9)}); },
               "ReduceLrOnPlateau", {"threshold_mode", "9"});
  expect_error([] { return ReduceLrOnPlateau(0.1, {.factor = 1.0}); }, "ReduceLrOnPlateau", {"factor", "1"});
  expect_error([] { return ReduceLrOnPlateau(0.1, {.factor = -0.1}); }, "ReduceLrOnPlateau", {"factor", "-0.1"});
  expect_error([] { return ReduceLrOnPlateau(0.1, {.patience = -1}); }, "ReduceLrOnPlateau", {"patience", "-1"});
  expect_error([] { return ReduceLrOnPlateau(0.1, {.threshold = -1e-4}); }, "ReduceLrOnPlateau",
               {"threshold", "-0.0001"});
  expect_error([] { return ReduceLrOnPlateau(0.1, {.cooldown = -2}); }, "ReduceLrOnPlateau", {"cooldown", "-2"});
  expect_error([] { return ReduceLrOnPlateau(0.1, {.min_lr = -1.0}); }, "ReduceLrOnPlateau", {"min_lr", "-1"});
  expect_error([] { return ReduceLrOnPlateau(0.1, {.eps = -1.0}); }, "ReduceLrOnPlateau", {"eps", "-1"});
  ReduceLrOnPlateau plateau(0.1);
  expect_error([&] { plateau.step(); }, "ReduceLrOnPlateau", {"step(metric)"});
  expect_error([&] { plateau.step(std::numeric_limits<double>::quiet_NaN()); }, "ReduceLrOnPlateau", {"NaN"});
  EXPECT_EQ(plateau.steps(), 0);
  // Where no metric is needed, a NaN one is still a mistake worth reporting.
  optim::StepLr step(0.1, 3);
  expect_error([&] { step.step(std::numeric_limits<double>::quiet_NaN()); }, "StepLr", {"NaN"});
}

TEST(LrScheduler, BadWarmupArgumentsAreErrors) {
  const optim::StepLr then(0.1, 3);
  expect_error([&] { return optim::LinearWarmup(then, 0, 0.1); }, "LinearWarmup", {"warmup_steps", "0"});
  expect_error([&] { return optim::LinearWarmup(then, 5, 1.5); }, "LinearWarmup", {"start_factor", "1.5"});
  optim::StepLr stepped(0.1, 3);
  stepped.step();
  expect_error([&] { return optim::LinearWarmup(stepped, 5, 0.1); }, "LinearWarmup", {"StepLr", "step 1"});
  // After the warmup, a plateau that follows needs its metric.
  optim::LinearWarmup warmup(optim::ReduceLrOnPlateau(0.1), 1, 0.1);
  warmup.step();  // during the warmup, no metric is needed
  expect_error([&] { warmup.step(); }, "ReduceLrOnPlateau", {"step(metric)"});
}

// A state with `key` set to `value`.
optim::State with(optim::State s, const std::string& key, double value) {
  s.numbers[key] = value;
  return s;
}

optim::State without(optim::State s, const std::string& key) {
  s.numbers.erase(key);
  return s;
}

TEST(LrScheduler, BadStatesAreErrorsAndChangeNothing) {
  optim::CosineAnnealingLr cosine(0.1, 10);
  for (int i = 0; i < 3; ++i) cosine.step();
  const optim::State good = cosine.state();
  EXPECT_EQ(good.numbers.count("kind.CosineAnnealingLr"), 1u);
  const std::string who = "CosineAnnealingLr";

  expect_error([&] { cosine.load_state(optim::StepLr(0.1, 3).state()); }, who, {"saved by StepLr", who});
  expect_error([&] { cosine.load_state(without(good, "kind.CosineAnnealingLr")); }, who, {"no scheduler kind"});
  expect_error([&] { cosine.load_state(without(good, "lr")); }, who, {"lacks", "\"lr\""});
  expect_error([&] { cosine.load_state(with(good, "best", 1.0)); }, who, {"unexpected", "\"best\""});
  expect_error([&] { cosine.load_state(with(good, "step", -1.0)); }, who, {"step", "-1"});
  expect_error([&] { cosine.load_state(with(good, "step", 2.5)); }, who, {"step", "2.5"});
  expect_error([&] { cosine.load_state(with(good, "step", 1e300)); }, who, {"step", "1e+300"});
  expect_error([&] { cosine.load_state(with(good, "lr", std::numeric_limits<double>::quiet_NaN())); }, who,
               {"lr", "nan"});
  optim::State with_tensor = good;
  with_tensor.tensors.push_back({"exp_avg.fc1.weight", Tensor()});
  expect_error([&] { cosine.load_state(with_tensor); }, who, {"no tensors", "1"});
  EXPECT_EQ(cosine.state().numbers, good.numbers);  // every failed load left it as it was

  optim::OneCycleLr one_cycle(0.1, 10);
  expect_error([&] { one_cycle.load_state(with(one_cycle.state(), "step", 11.0)); }, "OneCycleLr",
               {"step", "10", "11"});
  EXPECT_NO_THROW(one_cycle.load_state(with(one_cycle.state(), "step", 10.0)));

  optim::ReduceLrOnPlateau plateau(0.1, {.patience = 2, .cooldown = 3});
  const optim::State fresh = plateau.state();
  EXPECT_EQ(fresh.numbers.at("best"), std::numeric_limits<double>::infinity());
  expect_error([&] { plateau.load_state(with(fresh, "num_bad", 3.0)); }, "ReduceLrOnPlateau", {"num_bad", "3"});
  expect_error([&] { plateau.load_state(with(fresh, "cooldown_counter", 4.0)); }, "ReduceLrOnPlateau",
               {"cooldown_counter", "4"});
  expect_error([&] { plateau.load_state(with(fresh, "lr", -0.1)); }, "ReduceLrOnPlateau", {"lr", "-0.1"});
  expect_error([&] { plateau.load_state(with(fresh, "best", std::numeric_limits<double>::quiet_NaN())); },
               "ReduceLrOnPlateau", {"best", "nan"});
  EXPECT_EQ(plateau.state().numbers, fresh.numbers);

  optim::LinearWarmup warmup(optim::StepLr(0.1, 3), 4, 0.1);
  for (int i = 0; i < 6; ++i) warmup.step();
  const optim::State warm = warmup.state();
  EXPECT_EQ(warm.numbers.at("then.step"), 2.0);
  expect_error([&] { warmup.load_state(with(warm, "then.step", 1.0)); }, "LinearWarmup", {"then.step", "2", "1"});
  optim::LinearWarmup other(optim::ExponentialLr(0.1, 0.9), 4, 0.1);
  expect_error([&] { other.load_state(warm); }, "LinearWarmup", {"StepLr", "then.", "ExponentialLr"});
  expect_error([&] { warmup.load_state(with(warm, "then.step", -1.0)); }, "LinearWarmup", {"then.step"});
  EXPECT_EQ(warmup.state().numbers, warm.numbers);
}

}  // namespace
}  // namespace kiln
