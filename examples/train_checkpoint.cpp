// Trains a small MLP on a synthetic task (is the sum of the inputs positive?) with AdamW, a
// warmup + cosine schedule and gradient clipping; saves a checkpoint halfway, resumes from it in
// a fresh model, optimizer and schedule, and checks that the resumed run ends with the same
// weights as the uninterrupted one. Then saves the weights as safetensors and loads them back.
#include <cstdio>
#include <filesystem>

#include <kiln/io.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

using namespace kiln;

struct MLP : nn::Module {
  nn::Linear fc1{16, 32}, fc2{32, 2};
  Tensor forward(const Tensor& x) const { return fc2(relu(fc1(x))); }
  KILN_MODULE(MLP, fc1, fc2)
};

struct Run {
  MLP model;
  optim::AdamW opt{{.lr = 1e-2, .weight_decay = 0.01}};
  optim::LinearWarmup schedule{optim::CosineAnnealingLr(1e-2, 60), 10, 0.1};
  Run() { opt.add_group({.selects = optim::is_bias_or_norm, .weight_decay = 0.0}); }

  // One step on batch `s` (drawn from a generator seeded by s, so any run sees the same data).
  Tensor step(std::int64_t s) {
    Generator g(static_cast<std::uint64_t>(s) + 1);
    const Tensor x = randn(Shape{64, 16}, g);
    const Tensor y = cast(gt(sum(x, {1}), 0.0), DType::i64);
    const Tensor loss = nn::cross_entropy(model(x), y);
    Gradients grads = backward(loss);
    optim::clip_grad_norm(grads, model, 1.0);
    model = opt.step(schedule.lr(), std::move(model), grads);
    schedule.step();
    return loss;
  }
};

int main() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kiln_train_checkpoint";
  std::filesystem::create_directories(dir);

  manual_seed(0);
  Run whole;
  for (std::int64_t s = 0; s < 60; ++s) {
    const Tensor loss = whole.step(s);
    if (s % 10 == 0 || s == 59) std::printf("step %2lld  lr %.5f  loss %.4f\n", static_cast<long long>(s),
                                            whole.schedule.lr(), loss.item<float>().get());
  }

  manual_seed(0);
  Run first;
  for (std::int64_t s = 0; s < 30; ++s) first.step(s);
  io::save_checkpoint(dir / "half.safetensors", first.model,
                      {first.opt.state(), first.schedule.state(), 30, default_generator()});

  Run resumed;  // fresh weights, moments and schedule: all come from the file
  const io::TrainingState state = io::load_checkpoint(dir / "half.safetensors", resumed.model);
  resumed.opt.load_state(state.optimizer);
  resumed.schedule.load_state(state.scheduler);
  for (std::int64_t s = state.step; s < 60; ++s) resumed.step(s);

  const bool same = whole.model.fc1.weight.value().to_vector<float>().get() ==
                    resumed.model.fc1.weight.value().to_vector<float>().get();
  std::printf("resumed at step %lld: %s\n", static_cast<long long>(state.step),
              same ? "same weights as the uninterrupted run" : "DIFFERENT weights");

  io::save_model(whole.model, dir / "mlp.safetensors");
  MLP loaded;
  io::load_model(loaded, dir / "mlp.safetensors");
  std::printf("saved and loaded %lld parameters\n", static_cast<long long>(loaded.parameter_count()));
  std::filesystem::remove_all(dir);
  return same ? 0 : 1;
}
