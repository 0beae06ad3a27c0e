// Models written as kiln modules against their PyTorch twins (tests/data/gen_nn_modules.py):
// state_dict names, shapes and order, parameter counts, training-mode outputs, every
// parameter's gradient, the buffers a training step updates, and eval-mode outputs.
#include <gtest/gtest.h>

#include "nn/module_cases.h"

namespace kiln::test {

namespace {

// Training-mode forward, gradients of sum(seed * output), buffers after, eval-mode forward.
template <class M> void expect_model_like_torch(const M& fresh, const Json& c, Device device) {
  M model = load_state(fresh, c, device);
  model.train();
  const Tensor x = make_tensor(c.at("input"), device);
  const Tensor out = model(x);
  const Tolerance tol{1e-4, 1e-5};
  EXPECT_TRUE(matches(out, c.at("train_output"), tol));

  const Gradients grads = backward(sum(mul(out, make_tensor(c.at("seed"), device))));
  const std::map<std::string, Json> want = by_name(c.at("grads"));
  for (const nn::NamedTensor& p : model.named_parameters()) {
    ASSERT_TRUE(want.count(p.name)) << p.name;
    EXPECT_TRUE(matches(grads.get(p.tensor), want.at(p.name), tol)) << p.name;
  }
  for (const auto& [name, tensor] : by_name(c.at("buffers_after_train"))) {
    bool found = false;
    for (const nn::NamedTensor& b : model.named_buffers())
      if (b.name == name) {
        found = true;
        EXPECT_TRUE(matches(b.tensor, tensor, tol)) << name;
      }
    EXPECT_TRUE(found) << name;
  }

  model.eval();
  NoGradGuard no_grad;
  EXPECT_TRUE(matches(model(x), c.at("eval_output"), tol));
}

class ModelsLikeTorch : public ::testing::TestWithParam<Device> {};

TEST(ModelsLikeTorch, StateDictNamesShapesAndCounts) {
  expect_state_dict_names(MLP{}, module_case("mlp"));
  expect_state_dict_names(sequential_model(), module_case("sequential"));
  expect_state_dict_names(SmallCNN{}, module_case("small_cnn"));
  expect_state_dict_names(ResidualBlock(4), module_case("residual_block"));
}

TEST_P(ModelsLikeTorch, Mlp) { expect_model_like_torch(MLP{}, module_case("mlp"), GetParam()); }

TEST_P(ModelsLikeTorch, Sequential) {
  expect_model_like_torch(sequential_model(), module_case("sequential"), GetParam());
}

TEST_P(ModelsLikeTorch, SmallCnn) { expect_model_like_torch(SmallCNN{}, module_case("small_cnn"), GetParam()); }

TEST_P(ModelsLikeTorch, ResidualBlock) {
  expect_model_like_torch(ResidualBlock(4), module_case("residual_block"), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Devices, ModelsLikeTorch, ::testing::ValuesIn(test_devices()), device_param_name);

}  // namespace
}  // namespace kiln::test
