// Every layer against its torch.nn twin (tests/data/gen_nn_layers.py): state_dict names and
// shapes, parameter counts, the output in training and in eval mode, and the gradients of every
// parameter and input, with the weights loaded by name. Whole models: test_modules.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "nn/module_cases.h"

namespace kiln::test {
namespace {

template <class M> void expect_layer_like_torch(const M& fresh, const Json& c, Device device) {
  expect_state_dict_names(fresh, c);
  M layer = load_state(fresh, c, device);
  std::vector<Tensor> inputs;
  for (const Json& t : c.at("inputs")) {
    const Tensor x = make_tensor(t, device);
    inputs.push_back(is_floating(x.dtype()) ? require_grad(x) : x);
  }
  const auto run = [&] {
    if constexpr (requires { layer(inputs[0], inputs[0]); }) {
      return layer(inputs[0], inputs[1]);
    } else {
      return layer(inputs[0]);
    }
  };
  const Tolerance tol{1e-4, 1e-5};
  layer.train();
  const Tensor out = run();
  EXPECT_TRUE(matches(out, c.at("train_output"), tol)) << c.at("name");

  const Gradients g = backward(out, make_tensor(c.at("seed"), device));
  const std::map<std::string, Json> want = by_name(c.at("grads"));
  for (const nn::NamedTensor& p : layer.named_parameters())
    EXPECT_TRUE(matches(g.get(p.tensor), want.at(p.name), tol)) << c.at("name") << " " << p.name;
  std::size_t next = 0;
  for (const Tensor& x : inputs)
    if (is_floating(x.dtype())) {
      EXPECT_TRUE(matches(g.get(x), c.at("input_grads").at(next++), tol)) << c.at("name");
    }

  layer.eval();
  EXPECT_TRUE(matches(run(), c.at("eval_output"), tol)) << c.at("name");
}

template <class M> std::pair<std::string, std::function<void(Device)>> layer(const char* name, M fresh) {
  return {name, [name, fresh](Device d) { expect_layer_like_torch(fresh, nn_case("nn_layers.json", name), d); }};
}

const std::vector<std::pair<std::string, std::function<void(Device)>>>& layers() {
  static const auto all = std::vector<std::pair<std::string, std::function<void(Device)>>>{
      layer("bilinear", nn::Bilinear(3, 4, 5)),
      layer("embedding_padding", nn::Embedding(6, 3, {.padding_idx = 2})),
      layer("conv1d_stride_groups", nn::Conv1d(4, 6, {3}, {.stride = {2}, .padding = {1}, .groups = 2})),
      layer("conv3d", nn::Conv3d(2, 3, {2, 3, 2}, {.padding = {1, 0, 1}})),
      layer("conv2d_same_dilated", nn::Conv2d(3, 4, {3}, {.dilation = {2}, .same_padding = true})),
      layer("conv2d_depthwise", nn::Conv2d(4, 4, {3}, {.padding = {1}, .groups = 4, .bias = false})),
      layer("conv_transpose1d", nn::ConvTranspose1d(3, 4, {3}, {.stride = {2}, .padding = {1}, .output_padding = {1}})),
      layer("conv_transpose2d_groups", nn::ConvTranspose2d(4, 6, {3, 2}, {.stride = {2, 1}, .groups = 2})),
      layer("batchnorm1d", nn::BatchNorm1d(3)),
      layer("batchnorm1d_flat_no_affine", nn::BatchNorm1d(3, {.momentum = 0.3, .affine = false})),
      layer("layernorm", nn::LayerNorm({3, 4})),
      layer("groupnorm", nn::GroupNorm(2, 4)),
      layer("instancenorm2d_affine", nn::InstanceNorm2d(3, {.affine = true})),
      layer("instancenorm1d", nn::InstanceNorm1d(3)),
      layer("prelu_channels", nn::PReLU(3, {.init = 0.2})),
      layer("leaky_relu", nn::LeakyReLU({.negative_slope = 0.2})),
      layer("elu", nn::ELU({.alpha = 0.7})),
      layer("gelu_tanh", nn::GELU({.tanh_approximation = true})),
      layer("silu", nn::SiLU()),
      layer("mish", nn::Mish()),
      layer("softmax", nn::Softmax(1)),
      layer("log_softmax", nn::LogSoftmax(-1)),
      layer("max_pool1d", nn::MaxPool1d({.kernel = {3}, .stride = {2}, .padding = {1}})),
      layer("max_pool2d_ceil", nn::MaxPool2d({.kernel = {2}, .ceil_mode = true})),
      layer("avg_pool2d", nn::AvgPool2d({.kernel = {3}, .stride = {2}, .padding = {1}, .count_include_pad = false})),
      layer("avg_pool1d", nn::AvgPool1d({.kernel = {2}})),
      layer("adaptive_avg_pool2d", nn::AdaptiveAvgPool2d({2, 3})),
      layer("adaptive_avg_pool1d", nn::AdaptiveAvgPool1d({3})),
      layer("adaptive_max_pool2d", nn::AdaptiveMaxPool2d({3, 2})),
      layer("upsample_bilinear", nn::Upsample({5, 7}, {.mode = InterpolateMode::bilinear, .align_corners = true})),
      layer("upsample_nearest", nn::Upsample({6, 4})),
      layer("flatten", nn::Flatten()),
      layer("dropout_eval_train", nn::Dropout({.p = 0.0})),
  };
  return all;
}

TEST(LayersLikeTorch, Cpu) {
  for (const auto& [name, check] : layers()) {
    SCOPED_TRACE(name);
    check(Device::cpu());
  }
}

// A few on every other device (lavapipe in CI is slow: one of each kind).
TEST(LayersLikeTorch, OtherDevices) {
  const std::vector<std::string> some = {"conv2d_depthwise", "conv_transpose2d_groups", "groupnorm", "max_pool2d_ceil",
                                         "upsample_bilinear", "embedding_padding"};
  for (const Device& d : test_devices()) {
    if (d == Device::cpu()) continue;
    for (const auto& [name, check] : layers())
      if (std::find(some.begin(), some.end(), name) != some.end()) {
        SCOPED_TRACE(name + " on " + d.str());
        check(d);
      }
  }
}

// Default initialization draws from torch's ranges: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for
// linear and convolution weights and biases (fan_in from the weight's layout), ones and zeros
// for the norms.
TEST(LayersLikeTorch, DefaultInitializationRanges) {
  const auto within = [](const Tensor& t, double bound) {
    const std::vector<float> v = t.to_vector<float>().get();
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return *lo >= -bound && *hi <= bound && *hi - *lo > bound;  // inside, and spread over it
  };
  const nn::Conv2d conv(8, 16, {3});
  EXPECT_TRUE(within(conv.weight, 1.0 / std::sqrt(8.0 * 9)));
  EXPECT_TRUE(within(conv.bias, 1.0 / std::sqrt(8.0 * 9)));
  const nn::ConvTranspose2d deconv(8, 6, {3}, {.groups = 2});  // weight [8, 3, 3, 3]: fan_in 27
  EXPECT_TRUE(within(deconv.weight, 1.0 / std::sqrt(27.0)));
  const nn::Linear lin(50, 20);
  EXPECT_TRUE(within(lin.weight, 1.0 / std::sqrt(50.0)));
  const nn::BatchNorm2d bn(4);
  EXPECT_EQ(bn.weight.value().to_vector<float>().get(), std::vector<float>(4, 1.0f));
  EXPECT_EQ(bn.running_var.get().to_vector<float>().get(), std::vector<float>(4, 1.0f));
}

// The convolution and pooling layers are class templates over their spatial dims: each
// instance still reports its PyTorch name, and the 3-d transposed convolution and 1-d adaptive
// max pooling (no reference case of their own) run the engine's ops of their dims.
TEST(LayersLikeTorch, TemplateInstancesHaveTheirTorchNames) {
  EXPECT_STREQ(nn::Conv1d(2, 3, {3}).type_name(), "Conv1d");
  EXPECT_STREQ(nn::Conv3d(2, 3, {3}).type_name(), "Conv3d");
  EXPECT_STREQ(nn::ConvTranspose2d(2, 3, {3}).type_name(), "ConvTranspose2d");
  EXPECT_STREQ(nn::AvgPool1d({.kernel = {2}}).type_name(), "AvgPool1d");
  EXPECT_STREQ(nn::AdaptiveAvgPool2d({2}).type_name(), "AdaptiveAvgPool2d");

  const nn::ConvTranspose3d deconv(2, 4, {3}, {.stride = {2}});
  EXPECT_STREQ(deconv.type_name(), "ConvTranspose3d");
  EXPECT_EQ(deconv.weight.shape(), Shape({2, 4, 3, 3, 3}));
  EXPECT_EQ(deconv(zeros({1, 2, 2, 3, 4})).shape(), Shape({1, 4, 5, 7, 9}));

  const nn::AdaptiveMaxPool1d pool({3});
  EXPECT_STREQ(pool.type_name(), "AdaptiveMaxPool1d");
  EXPECT_EQ(pool(reshape(arange(12.0), {1, 2, 6})).to_vector<float>().get(),
            (std::vector<float>{1, 3, 5, 7, 9, 11}));
}

}  // namespace
}  // namespace kiln::test
