// Extending kiln from your own code (README, "Extending kiln"): a layer with a parameter of its
// own and an optimizer, written against the public headers alone, then trained for a few steps
// together with kiln's own layers.
#include <cstdio>
#include <exception>
#include <kiln/kiln.h>

namespace {

using namespace kiln;

// A learned per-feature scale: y = x * weight. The parameter is a field, listed in KILN_MODULE,
// so state_dict paths ("scale.weight"), optimizers and safetensors files find it.
// Options live beside the class, not inside it: C++ cannot take a nested struct's default
// member values as a default argument of the class that holds it.
struct ScaleOptions {
  double init = 1.0;
  Device device = Device::cpu();
};
class Scale : public nn::Module {
 public:
  explicit Scale(std::int64_t features, ScaleOptions options = {})
      : weight(full(Shape{features}, options.init, TensorOptions{DType::f32, options.device})) {}

  // Built from public ops, so it fuses, runs on every device and has gradients.
  Tensor forward(const Tensor& x) const { return mul(x, weight.value()); }

  nn::Parameter weight;
  KILN_MODULE(Scale, weight)
};

// signSGD with decoupled weight decay: p = p (1 - lr wd) - lr sign(g). No per-parameter state.
struct SignSgdOptions {
  double lr = 1e-2;
  double weight_decay = 0.0;
};
class SignSgd : public optim::Optimizer {
 public:
  explicit SignSgd(SignSgdOptions options = {}) : Optimizer(options.lr, options.weight_decay) {
    check_option(options.lr >= 0, "lr must be >= 0, got " + std::to_string(options.lr));
  }
  const char* name() const override { return "SignSGD"; }

 protected:
  std::vector<std::string> slot_names() const override { return {}; }
  Tensor update_parameter(const optim::UpdateContext& ctx, Tensor param, const Tensor& grad,
                          std::vector<Tensor>&) const override {
    if (ctx.weight_decay != 0) param = mul(std::move(param), 1 - ctx.lr * ctx.weight_decay);
    return sub(std::move(param), mul(sign(grad), ctx.lr));
  }
};

class Model : public nn::Module {
 public:
  Model() : fc(nn::Linear(4, 3)), scale(Scale(3, {.init = 0.5})) {}
  Tensor forward(const Tensor& x) const { return scale.forward(fc.forward(x)); }

  nn::Linear fc;
  Scale scale;
  KILN_MODULE(Model, fc, scale)
};

}  // namespace

int main() try {
  Generator gen(7);
  Model model;
  SignSgd opt({.lr = 0.05});
  const Tensor x = randn(Shape{16, 4}, gen);
  const Tensor target = randn(Shape{16, 3}, gen);
  for (int step = 0; step < 20; ++step) {
    Tensor loss = nn::mse_loss(model.forward(x), target);
    Gradients grads = backward(loss);
    model = opt.step(std::move(model), grads);
    if (step % 5 == 0 || step == 19) std::printf("step %2d  loss %.4f\n", step, loss.item<float>().get());
  }
  for (const auto& [name, value] : model.state_dict()) std::printf("%s %s\n", name.c_str(), value.shape().str().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "extending: %s\n", e.what());
  return 1;
}
