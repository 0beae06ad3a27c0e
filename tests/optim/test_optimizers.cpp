// Optimizer trajectories against PyTorch's (tests/data/gen_optim.py): the same initial
// parameters and gradients, 20 steps, the parameters compared after steps 1, 2, 3, 5, 10 and
// 20 and the final moments by their state names. Also: the end-to-end MLP run, state save and
// resume, value semantics (a copy of the module keeps its values), and misuse.
#include <gtest/gtest.h>

#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"
#include "support/expect_error.h"
#include "support/reference.h"

namespace kiln {
namespace {

using test::Json;

const std::vector<test::RefCase>& cases() {
  static const std::vector<test::RefCase> c = test::load_cases("optim.json");
  return c;
}
const test::RefCase& ref(const std::string& name) {
  const test::RefCase* c = test::find_case(cases(), name);
  if (!c) throw std::runtime_error("no case " + name + " in optim.json");
  return *c;
}

constexpr int kSteps = 20;
constexpr std::size_t kParams = 4;

nn::Sequential small_model() { return nn::Sequential(nn::Linear(4, 3), nn::Tanh(), nn::Linear(3, 2)); }

// The torch twin's initial parameters, in state_dict order.
nn::Sequential initial_model(Device d = Device::cpu()) {
  nn::Sequential m = small_model();
  const test::RefCase& setup = ref("setup");
  std::size_t i = 0;
  m.map_parameters_in_place([&](const std::string&, const Tensor&) { return test::make_tensor(setup.inputs[i++], d); });
  return m;
}

// The gradient of parameter `k` at step `s` (0-based).
Tensor step_grad(int s, std::size_t k, Device d = Device::cpu()) {
  return test::make_tensor(ref("setup").inputs[kParams + static_cast<std::size_t>(s) * kParams + k], d);
}

double option(const Json& o, const char* key, double fallback) { return o.contains(key) ? o.at(key).get<double>() : fallback; }
bool flag(const Json& o, const char* key) { return o.contains(key) && o.at(key).get<bool>(); }

std::unique_ptr<optim::Optimizer> make_optimizer(const Json& attrs) {
  const std::string kind = attrs.at("optimizer");
  const Json& o = attrs.at("options");
  if (kind == "sgd")
    return std::make_unique<optim::Sgd>(optim::SgdOptions{.lr = option(o, "lr", 1e-2), .momentum = option(o, "momentum", 0),
                                                          .dampening = option(o, "dampening", 0),
                                                          .nesterov = flag(o, "nesterov"),
                                                          .weight_decay = option(o, "weight_decay", 0)});
  if (kind == "adam")
    return std::make_unique<optim::Adam>(optim::AdamOptions{.lr = option(o, "lr", 1e-3), .beta1 = option(o, "beta1", 0.9),
                                                            .beta2 = option(o, "beta2", 0.999), .eps = option(o, "eps", 1e-8),
                                                            .weight_decay = option(o, "weight_decay", 0),
                                                            .amsgrad = flag(o, "amsgrad")});
  if (kind == "adamw")
    return std::make_unique<optim::AdamW>(optim::AdamWOptions{.lr = option(o, "lr", 1e-3), .beta1 = option(o, "beta1", 0.9),
                                                              .beta2 = option(o, "beta2", 0.999), .eps = option(o, "eps", 1e-8),
                                                              .weight_decay = option(o, "weight_decay", 1e-2),
                                                              .amsgrad = flag(o, "amsgrad")});
  if (kind == "rmsprop")
    return std::make_unique<optim::Rmsprop>(optim::RmspropOptions{.lr = option(o, "lr", 1e-2), .alpha = option(o, "alpha", 0.99),
                                                                  .eps = option(o, "eps", 1e-8),
                                                                  .weight_decay = option(o, "weight_decay", 0),
                                                                  .momentum = option(o, "momentum", 0),
                                                                  .centered = flag(o, "centered")});
  if (kind == "adagrad")
    return std::make_unique<optim::Adagrad>(optim::AdagradOptions{
        .lr = option(o, "lr", 1e-2), .lr_decay = option(o, "lr_decay", 0), .weight_decay = option(o, "weight_decay", 0),
        .initial_accumulator_value = option(o, "initial_accumulator_value", 0), .eps = option(o, "eps", 1e-10)});
  if (kind == "adadelta")
    return std::make_unique<optim::Adadelta>(optim::AdadeltaOptions{.lr = option(o, "lr", 1.0), .rho = option(o, "rho", 0.9),
                                                                    .eps = option(o, "eps", 1e-6),
                                                                    .weight_decay = option(o, "weight_decay", 0)});
  if (kind == "lion")
    return std::make_unique<optim::Lion>(optim::LionOptions{.lr = option(o, "lr", 1e-4), .beta1 = option(o, "beta1", 0.9),
                                                            .beta2 = option(o, "beta2", 0.99),
                                                            .weight_decay = option(o, "weight_decay", 0)});
  throw std::runtime_error("unknown optimizer " + kind);
}

bool skipped(const Json& attrs, int step, std::size_t k) {
  for (const Json& s : attrs.at("skip"))
    if (s.at(0).get<int>() == step + 1 && s.at(1).get<std::size_t>() == k) return true;
  return false;
}

// The gradients of step `s` for the model's current parameters (skipping as the case says).
Gradients gradients_at(const nn::Module& model, const Json& attrs, int s, Device d = Device::cpu()) {
  Gradients g;
  const std::vector<Tensor> params = model.parameters();
  for (std::size_t k = 0; k < kParams; ++k)
    if (!skipped(attrs, s, k)) g.accumulate(params[k].id(), step_grad(s, k, d));
  return g;
}

class Trajectory : public ::testing::TestWithParam<std::string> {};

TEST_P(Trajectory, MatchesTorch) {
  const test::RefCase& c = ref(GetParam());
  const Json& attrs = c.attrs;
  std::unique_ptr<optim::Optimizer> opt = make_optimizer(attrs);
  if (attrs.contains("groups")) {
    const Json& g = attrs.at("groups").at(0);
    opt->add_group({optim::is_bias_or_norm, g.at("lr_scale").get<double>(), g.at("weight_decay").get<double>()});
  }
  nn::Sequential model = initial_model();
  const std::vector<int> record = attrs.at("record").get<std::vector<int>>();
  const std::vector<double> lrs = attrs.at("lrs").get<std::vector<double>>();
  std::vector<Tensor> norms;
  std::size_t out = 0;
  for (int s = 0; s < kSteps; ++s) {
    Gradients g = gradients_at(model, attrs, s);
    if (attrs.contains("clip")) {
      const Json& clip = attrs.at("clip");
      if (clip.contains("norm")) {
        const Json& type = clip.at("type");
        const double p = type.is_string() ? std::numeric_limits<double>::infinity() : type.get<double>();
        norms.push_back(optim::clip_grad_norm(g, model, clip.at("norm").get<double>(), p));
      } else {
        optim::clip_grad_value(g, model, clip.at("value").get<double>());
      }
    }
    model = opt->step(lrs[static_cast<std::size_t>(s)], std::move(model), g);
    if (std::find(record.begin(), record.end(), s + 1) == record.end()) continue;
    const std::vector<nn::NamedTensor> params = model.named_parameters();
    for (std::size_t k = 0; k < kParams; ++k)
      EXPECT_TRUE(test::matches(params[k].tensor, c.outputs[out++], {1e-5, 1e-6})) << "after step " << s + 1 << ", " << params[k].name;
  }
  // The moments, by name.
  const optim::State state = opt->state();
  const std::vector<std::string> names = attrs.at("state_names").get<std::vector<std::string>>();
  EXPECT_EQ(state.tensors.size(), names.size());
  for (const std::string& name : names) {
    auto it = std::find_if(state.tensors.begin(), state.tensors.end(), [&](const nn::NamedTensor& t) { return t.name == name; });
    ASSERT_NE(it, state.tensors.end()) << name;
    EXPECT_TRUE(test::matches(it->tensor, c.outputs[out++], {1e-5, 1e-6})) << name;
  }
  for (const Tensor& n : norms) EXPECT_TRUE(test::matches(n, c.outputs[out++], {1e-5, 1e-6})) << "clip norm";
  EXPECT_EQ(out, c.outputs.size());
  EXPECT_EQ(state.numbers.at("steps"), kSteps);
}

INSTANTIATE_TEST_SUITE_P(Torch, Trajectory,
                         ::testing::Values("sgd", "sgd_momentum_dampening_decay", "sgd_nesterov", "adam",
                                           "adam_decay_amsgrad", "adamw", "adamw_amsgrad", "rmsprop",
                                           "rmsprop_centered_momentum", "adagrad", "adadelta", "adadelta_options", "lion",
                                           "adamw_groups_no_decay_on_biases", "adam_decaying_lr", "adam_missing_gradients",
                                           "sgd_momentum_missing_first", "sgd_clip_norm", "adam_clip_norm_inf",
                                           "sgd_clip_norm_l1", "sgd_clip_value"),
                         [](const auto& info) { return info.param; });

// kiln's own forward and backward, then Adam: the loss of every step against torch's.
TEST(OptimizerTraining, MlpAdamLossesMatchTorch) {
  const test::RefCase& c = ref("mlp_adam");
  nn::Sequential model(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 3));
  std::size_t i = 2;
  model.map_parameters_in_place([&](const std::string&, const Tensor&) { return test::make_tensor(c.inputs[i++]); });
  const Tensor x = test::make_tensor(c.inputs[0]), target = test::make_tensor(c.inputs[1]);
  optim::Adam opt({.lr = c.attrs.at("lr").get<double>()});
  for (std::size_t s = 0; s < c.outputs.size(); ++s) {
    const Tensor loss = nn::cross_entropy(model(x), target);
    EXPECT_TRUE(test::matches(loss, c.outputs[s], {1e-4, 1e-6})) << "step " << s;
    const Gradients g = backward(loss);
    model = opt.step(std::move(model), g);
  }
}

// Stopping after 10 steps, saving the state and resuming in a new optimizer gives, exactly, the
// parameters of a run that never stopped.
TEST(OptimizerState, ResumeEqualsUninterruptedRun) {
  const Json& attrs = ref("adam_decay_amsgrad").attrs;
  auto run = [&](bool interrupt) {
    std::unique_ptr<optim::Optimizer> opt = make_optimizer(attrs);
    nn::Sequential model = initial_model();
    for (int s = 0; s < kSteps; ++s) {
      if (interrupt && s == 10) {
        const optim::State saved = opt->state();
        opt = make_optimizer(attrs);
        opt->load_state(saved);
        EXPECT_EQ(opt->steps(), 10);
      }
      model = opt->step(std::move(model), gradients_at(model, attrs, s));
    }
    return test::host_values(model.parameters()[0]);
  };
  EXPECT_EQ(run(true), run(false));
}

TEST(OptimizerState, RejectsAnotherOptimizersStateAndMismatchedShapes) {
  const Json& attrs = ref("adam").attrs;
  optim::Adam adam;
  nn::Sequential model = initial_model();
  model = adam.step(std::move(model), gradients_at(model, attrs, 0));
  optim::Sgd sgd({.momentum = 0.9});
  test::expect_error([&] { sgd.load_state(adam.state()); }, "SGD", {"exp_avg", "another optimizer"});
  // A state for a model whose first layer is wider: checked before anything changes.
  optim::Adam other;
  nn::Sequential wide(nn::Linear(4, 5), nn::Tanh(), nn::Linear(5, 2));
  other.load_state(adam.state());
  const std::vector<double> before = test::host_values(wide.parameters()[0]);
  Gradients g;
  for (const Tensor& p : wide.parameters()) g.accumulate(p.id(), ones_like(p));
  test::expect_error([&] { wide = other.step(std::move(wide), g); }, "Adam", {"0.weight", "exp_avg", "[3, 4]", "[5, 4]"});
}

// Parameters are values: a step never changes a tensor that a copy of the module holds.
TEST(OptimizerValues, CopiesKeepTheirValues) {
  const Json& attrs = ref("sgd").attrs;
  optim::Sgd opt({.lr = 0.1});
  nn::Sequential model = initial_model();
  const nn::Sequential before = model;  // shares the tensors
  const std::vector<double> old = test::host_values(before.parameters()[0]);
  model = opt.step(model, gradients_at(model, attrs, 0));  // a copy goes in: no buffer reuse
  EXPECT_EQ(test::host_values(before.parameters()[0]), old);
  EXPECT_NE(test::host_values(model.parameters()[0]), old);
}

// Frozen parameters and parameters without a gradient are left alone.
TEST(OptimizerValues, FrozenParametersStay) {
  optim::Adam opt({.lr = 0.1});
  nn::Sequential model = initial_model();
  model[0].freeze();
  const std::vector<double> frozen = test::host_values(model.parameters()[0]);
  Gradients g;
  for (const Tensor& p : model.parameters()) g.accumulate(p.id(), ones_like(p));
  model = opt.step(std::move(model), g);
  EXPECT_EQ(test::host_values(model.parameters()[0]), frozen);
  EXPECT_EQ(opt.state().tensors.size(), 4u);  // the second layer's two parameters, two moments each
}

TEST(OptimizerErrors, BadOptionsNameTheOptimizerAndValue) {
  test::expect_error([] { optim::Adam({.beta1 = 1.5}); }, "Adam", {"beta1", "1.5"});
  test::expect_error([] { optim::AdamW({.lr = -1}); }, "AdamW", {"lr", "-1"});
  test::expect_error([] { optim::Sgd({.nesterov = true}); }, "SGD", {"Nesterov", "momentum"});
  test::expect_error([] { optim::Rmsprop({.momentum = -0.5}); }, "RMSprop", {"momentum"});
  test::expect_error([] { optim::Adagrad({.lr_decay = -1}); }, "Adagrad", {"lr_decay"});
  test::expect_error([] { optim::Adadelta({.rho = 2}); }, "Adadelta", {"rho"});
  test::expect_error([] { optim::Lion({.beta2 = -0.1}); }, "Lion", {"beta2"});
  optim::Sgd sgd;
  nn::Sequential model = initial_model();
  test::expect_error([&] { model = sgd.step(-0.1, std::move(model), Gradients{}); }, "SGD", {"learning rate"});
  Gradients wrong;
  wrong.accumulate(model.parameters()[1].id(), ones(Shape{4}));
  test::expect_error([&] { model = sgd.step(std::move(model), wrong); }, "SGD", {"0.bias", "[4]", "[3]"});
  EXPECT_EQ(model.parameters().size(), kParams);  // nothing was taken out of the module
  test::expect_error([&] { sgd.add_group({}); }, "SGD", {"selector"});
  test::expect_error([&] { optim::clip_grad_norm(wrong, model, -1); }, "clip_grad_norm", {"max_norm"});
}

}  // namespace
}  // namespace kiln
