// The full-control step (it takes the model and returns the updated one) with two optimizers,
// one per module, saved with the checkpoints: both modules train, and a run stopped and resumed
// ends with the weights of one that never stopped, bit for bit. Metrics read the step's extra
// tensors by name: a second loss here, a regression's mean absolute error below.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "kiln/io/io.h"
#include "learner_test_support.h"
#include "support/expect_error.h"
#include "support/scratch_dir.h"

namespace kiln::train {
namespace {

using fixture::train_loader;
using fixture::valid_loader;

struct SideNet : nn::Module {
  nn::Linear fc1{2, 16}, fc2{16, 3};
  Tensor forward(const Tensor& x) const { return fc2(relu(fc1(x))); }
  KILN_MODULE(SideNet, fc1, fc2)
};

// Two modules trained side by side, each by its own optimizer (as a GAN's two are).
struct TwoNets : nn::Module {
  SideNet first, second;
  KILN_MODULE(TwoNets, first, second)
};

std::vector<float> values_of(const nn::Module& m) {
  std::vector<float> out;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.to_vector<float>().get();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

StepOutput validate(const TwoNets& m, const data::Batch& b) {
  Tensor logits = m.first(b.inputs);
  return {nn::cross_entropy(logits, b.labels),
          logits,
          b.labels,
          b.size(),
          {{"second_loss", nn::cross_entropy(m.second(b.inputs), b.labels)}}};
}

// The user's side of a run: the optimizers the step captures, and the Learner.
struct Gan {
  optim::Adam first_opt{optim::AdamOptions{.lr = 1e-2}};
  optim::Sgd second_opt{optim::SgdOptions{.lr = 0.1, .momentum = 0.9}};
  Learner<TwoNets> learner;

  explicit Gan(LearnerOptions options)
      : learner(
            make_nets(),
            [this](TwoNets m, const data::Batch& b) {
              Tensor logits = m.first(b.inputs);
              const Tensor first_loss = nn::cross_entropy(logits, b.labels);
              m.first = first_opt.step(std::move(m.first), backward(first_loss));
              const Tensor second_loss = nn::cross_entropy(m.second(b.inputs), b.labels);
              m.second = second_opt.step(std::move(m.second), backward(second_loss));
              return TrainOutput<TwoNets>{std::move(m),
                                          {first_loss, logits, b.labels, b.size(), {{"second_loss", second_loss}}}};
            },
            validate, with_dashboard_off(std::move(options))) {
    learner.save_state("first", first_opt).save_state("second", second_opt);
    learner.add_metric(
        std::make_unique<LambdaMetric>("second_loss", false, [](const StepOutput& s) { return s.get("second_loss"); }));
  }
  static TwoNets make_nets() {
    manual_seed(5);
    return TwoNets{};
  }
  static LearnerOptions with_dashboard_off(LearnerOptions o) {
    o.dashboard = DashboardMode::off;
    return o;
  }
};

TEST(LearnerFullControl, AStepWithTwoOptimizersTrainsBothModules) {
  Gan gan({.epochs = 4});
  const std::vector<float> first_before = values_of(Gan::make_nets().first);
  const std::vector<float> second_before = values_of(Gan::make_nets().second);
  const FitResult r = gan.learner.fit(train_loader(), &valid_loader());
  EXPECT_EQ(r.stopped_at.epoch, 4);
  EXPECT_NE(values_of(gan.learner.model().first), first_before);
  EXPECT_NE(values_of(gan.learner.model().second), second_before);
  EXPECT_EQ(gan.first_opt.steps(), 32);
  EXPECT_EQ(gan.second_opt.steps(), 32);
  const MetricHistory h = gan.learner.history();
  for (const char* metric : {"loss", "second_loss"}) {
    const auto v = h.epochs(metric, Split::valid);
    ASSERT_EQ(v.size(), 4u) << metric;
    EXPECT_LT(v.back().value, 0.8 * v.front().value) << metric;
  }
  // No schedule of the Learner's: no learning rate to report.
  EXPECT_TRUE(h.epochs("lr", Split::train).empty());
}

TEST(LearnerFullControl, TheStepsOptimizersAreSavedAndAResumeIsExact) {
  test::ScratchDir whole_dir("whole"), split_dir("split");
  Gan whole({.epochs = 4, .checkpoint_dir = whole_dir.path()});
  whole.learner.fit(train_loader(), &valid_loader());

  Gan first({.epochs = 2, .checkpoint_dir = split_dir.path()});
  first.learner.fit(train_loader(), &valid_loader());
  // The checkpoint holds both optimizers' moments, each under its name.
  const io::SafeTensorsFile file(split_dir.path() / "epoch-0002" / "checkpoint.safetensors");
  bool adam_moment = false, sgd_momentum = false;
  for (const auto& t : file.tensors()) {
    adam_moment |= t.name == "optimizer.first/exp_avg.fc1.weight";
    sgd_momentum |= t.name == "optimizer.second/momentum_buffer.fc1.weight";
  }
  EXPECT_TRUE(adam_moment);
  EXPECT_TRUE(sgd_momentum);

  Gan second({.epochs = 4, .checkpoint_dir = split_dir.path()});
  const FitResult r = second.learner.fit(train_loader(), &valid_loader());
  EXPECT_EQ(r.stopped_at.epoch, 4);
  EXPECT_EQ(second.first_opt.steps(), 32);  // 16 loaded, 16 taken
  EXPECT_EQ(values_of(second.learner.model()), values_of(whole.learner.model()));
}

TEST(LearnerFullControl, UpdateOptionsAreTheStepsOwnBusiness) {
  auto learner_with = [](LearnerOptions o) {
    Learner<TwoNets> l(
        TwoNets{},
        [](TwoNets m, const data::Batch&) {
          return TrainOutput<TwoNets>{std::move(m), {}};
        },
        validate, o);
  };
  test::expect_error([&] { learner_with({.accumulate_grad_batches = 2}); }, "Learner", {"full-control"});
  test::expect_error([&] { learner_with({.clip_grad_norm = 1.0}); }, "Learner", {"full-control"});
  Learner<TwoNets> no_valid(TwoNets{},
                            [](TwoNets m, const data::Batch&) {
                              return TrainOutput<TwoNets>{std::move(m), {}};
                            },
                            nullptr, {.dashboard = DashboardMode::off});
  test::expect_error([&] { no_valid.fit(train_loader(), &valid_loader()); }, "Learner", {"validation step"});
}

// --- A regression metric from the step's extra tensors ----------------------------------------

struct Regressor : nn::Module {
  nn::Linear fc{2, 1};
  Tensor forward(const Tensor& x) const { return fc(x); }
  KILN_MODULE(Regressor, fc)
};

// y = 0.5 x - y' + 0.2 over the fixture's points, as a dense target.
data::DatasetPtr<data::Example> line(std::uint64_t seed) {
  Generator g(seed);
  const std::vector<float> xy = uniform(Shape{256, 2}, -1, 1, g).to_vector<float>().get();
  std::vector<data::Example> items;
  for (std::size_t i = 0; i < 256; ++i)
    items.push_back({{xy[2 * i], xy[2 * i + 1]}, Shape{2}, -1, {0.5f * xy[2 * i] - xy[2 * i + 1] + 0.2f}});
  return data::in_memory(std::move(items));
}

StepOutput regression_step(const Regressor& m, const data::Batch& b) {
  const Tensor prediction = reshape(m(b.inputs), {b.size()});
  const Tensor target = reshape(b.targets, {b.size()});
  return {.loss = nn::mse_loss(prediction, target),
          .items = b.size(),
          .extra = {{"prediction", prediction}, {"target", target}}};
}

TEST(LearnerMetrics, ARegressionMetricReadsTheStepsExtraTensors) {
  const data::DataLoader<> train(line(1), {.batch_size = 32, .shuffle = true, .seed = 3});
  const data::DataLoader<> valid(line(2), {.batch_size = 64});
  manual_seed(5);
  Learner learner(Regressor{}, std::make_unique<optim::Adam>(optim::AdamOptions{.lr = 0.05}), regression_step,
                  {.epochs = 5, .dashboard = DashboardMode::off});
  learner.add_metric(std::make_unique<LambdaMetric>("mae", /*higher_is_better=*/false, [](const StepOutput& s) {
    return mean(abs(sub(s.get("prediction"), s.get("target"))));
  }));
  learner.fit(train, &valid);

  const MetricHistory history = learner.history();
  const auto mae = history.epochs("mae", Split::valid);
  ASSERT_EQ(mae.size(), 5u);
  EXPECT_LT(mae.back().value, 0.5 * mae.front().value);
  // The last epoch's value is the mean absolute error of the trained model over the valid set.
  const NoGradGuard no_grad;
  double total = 0;
  for (const data::Batch& b : valid.epoch(0)) {
    const std::vector<float> p = learner.model()(b.inputs).to_vector<float>().get();
    const std::vector<float> t = b.targets.to_vector<float>().get();
    for (std::size_t i = 0; i < p.size(); ++i) total += std::abs(p[i] - t[i]);
  }
  EXPECT_NEAR(mae.back().value, total / 256, 1e-5);
}

TEST(LearnerMetrics, AMissingExtraTensorIsAnErrorNamingIt) {
  manual_seed(5);
  Learner learner(Regressor{}, std::make_unique<optim::Adam>(), regression_step,
                  {.epochs = 1, .dashboard = DashboardMode::off});
  learner.add_metric(
      std::make_unique<LambdaMetric>("mae", false, [](const StepOutput& s) { return mean(abs(s.get("predicted"))); }));
  const data::DataLoader<> train(line(1), {.batch_size = 32});
  test::expect_error([&] { learner.fit(train); }, "StepOutput", {"'predicted'", "'prediction', 'target'"});
}

}  // namespace
}  // namespace kiln::train
