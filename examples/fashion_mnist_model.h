// The Fashion-MNIST classifier of kiln's main job: examples/fashion_mnist.cpp trains it and saves
// it with io::save_model; examples/serve loads it and answers requests with it. The constants
// below are what its training fed it, which anything serving it must feed it too.
#pragma once
#include <cstdint>

#include <kiln/nn.h>

// The same layers as the PyTorch twin: three conv-bn-relu blocks, the last two of stride 2
// (28 -> 14 -> 7; strided convolutions rather than max pooling, which is a composite of
// unfold and gather and costs more than the convolutions here), then two linear layers.
struct SmallCNN : kiln::nn::Module {
  kiln::nn::Conv2d conv1, conv2, conv3;
  kiln::nn::BatchNorm2d bn1, bn2, bn3;
  kiln::nn::Linear fc1, fc2;
  explicit SmallCNN(kiln::Device d = kiln::Device::cpu())
      : conv1(1, 32, {3}, {.padding = {1}, .device = d}),
        conv2(32, 64, {3}, {.stride = {2}, .padding = {1}, .device = d}),
        conv3(64, 64, {3}, {.stride = {2}, .padding = {1}, .device = d}),
        bn1(32, {.device = d}),
        bn2(64, {.device = d}),
        bn3(64, {.device = d}),
        fc1(64 * 7 * 7, 128, {.device = d}),
        fc2(128, 10, {.device = d}) {}
  kiln::Tensor forward(const kiln::Tensor& x) const {
    kiln::Tensor h = kiln::relu(bn1(conv1(x)));  // [N, 32, 28, 28]
    h = kiln::relu(bn2(conv2(h)));               // [N, 64, 14, 14]
    h = kiln::relu(bn3(conv3(h)));               // [N, 64, 7, 7]
    return fc2(kiln::relu(fc1(kiln::flatten(h, 1))));
  }
  KILN_MODULE(SmallCNN, conv1, bn1, conv2, bn2, conv3, bn3, fc1, fc2)
};

// The input: one channel of 28 x 28 pixels scaled to [0, 1] (data::fashion_mnist, as
// torchvision's ToTensor), then normalised with the training set's mean and std (the
// data::Normalize of examples/fashion_mnist.cpp and of its PyTorch twin).
inline constexpr std::int64_t kFashionMnistSide = 28;
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

// The output: ten scores (logits), one per class, in the dataset's label order.
inline constexpr const char* kFashionMnistClasses[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                       "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
