// Three models declared as kiln modules — an MLP, a small CNN and a residual block — each a
// dozen lines: fields are the layers, KILN_MODULE lists them once and names every parameter
// as PyTorch's state_dict would ("conv1.weight", "bn1.running_mean"). One training-mode
// forward and backward each, then a summary.
#include <cmath>
#include <cstdio>

#include <kiln/nn.h>

using namespace kiln;

struct MLP : nn::Module {
  nn::Linear fc1{784, 512}, fc2{512, 512}, fc3{512, 10};
  Tensor forward(const Tensor& x) const { return fc3(relu(fc2(relu(fc1(x))))); }
  KILN_MODULE(MLP, fc1, fc2, fc3)
};

struct SmallCNN : nn::Module {
  nn::Conv2d conv1{1, 32, {3}, {.padding = {1}}};
  nn::BatchNorm2d bn1{32};
  nn::Conv2d conv2{32, 64, {3}, {.padding = {1}}};
  nn::MaxPool2d pool{{.kernel = {2}}};
  nn::Linear fc{64 * 7 * 7, 10};
  Tensor forward(const Tensor& x) const {
    Tensor h = pool(relu(bn1(conv1(x))));  // [N, 32, 14, 14]
    h = pool(relu(conv2(h)));               // [N, 64, 7, 7]
    return fc(flatten(h, 1));
  }
  KILN_MODULE(SmallCNN, conv1, bn1, conv2, pool, fc)
};

struct ResidualBlock : nn::Module {
  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d bn1, bn2;
  explicit ResidualBlock(std::int64_t c)
      : conv1(c, c, {3}, {.padding = {1}, .bias = false}), conv2(c, c, {3}, {.padding = {1}, .bias = false}),
        bn1(c), bn2(c) {}
  Tensor forward(const Tensor& x) const { return relu(add(bn2(conv2(relu(bn1(conv1(x))))), x)); }
  KILN_MODULE(ResidualBlock, conv1, bn1, conv2, bn2)
};

template <class Model> void step(const char* name, const Model& model, const Tensor& x) {
  const Tensor out = model(x);
  const Gradients grads = backward(mean(mul(out, out)));
  // Reading a value waits for the work it needs: here the whole forward and backward pass.
  const Tensor& g = grads.get(model.parameters().front());
  const float norm = std::sqrt(sum(mul(g, g)).item<float>().get());
  std::printf("%s: output %s, %zu gradients, |d loss / d %s| = %.4g\n%s\n", name, out.shape().str().c_str(),
              grads.size(), model.named_parameters().front().name.c_str(), norm, model.summary().c_str());
}

int main() {
  manual_seed(0);
  step("MLP", MLP{}, randn(Shape{32, 784}));
  step("SmallCNN", SmallCNN{}, randn(Shape{8, 1, 28, 28}));
  step("ResidualBlock", ResidualBlock(16), randn(Shape{4, 16, 14, 14}));
}
