// kiln_first_steps: where a new model's first training step goes. The main job's CNN
// (examples/fashion_mnist_model.h) takes ten steps on a batch of 128 random images, each waited
// for, in a process that has compiled nothing yet; the program prints each step's time and the
// first over the tenth (issue: "a new model's first training step within 5x its tenth"). Run
// with KILN_LOG=debug to see each pipeline's SPIR-V and driver compile times on Vulkan, and with
// an empty KILN_CACHE_DIR for a machine that never ran kiln.
// Usage: kiln_first_steps [cpu|vulkan|vulkan:N]
#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "examples/fashion_mnist_model.h"
#include "kiln/autograd/autograd.h"
#include "kiln/optim/optim.h"

int main(int argc, char** argv) {
  using namespace kiln;
  using clock = std::chrono::steady_clock;
  const auto seconds = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  const std::optional<Device> device = parse_device(argc > 1 ? argv[1] : "cpu");
  if (!device) {
    std::fprintf(stderr, "usage: kiln_first_steps [cpu|vulkan|vulkan:N]\n");
    return 2;
  }
  const auto start = clock::now();
  sync(*device).get();  // the device opened (a GPU's instance, device and queues)
  const auto opened = clock::now();
  manual_seed(0);
  SmallCNN model(*device);
  optim::Adam opt({.lr = 1e-3});
  Generator gen(1);
  const Tensor x = randn(Shape{128, 1, 28, 28}, gen, {.device = *device});
  std::vector<std::int64_t> labels(128);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 10);
  const Tensor y = from_vector(std::move(labels), Shape{128}, *device);
  sync(*device).get();  // the weights made (their kernels compiled)
  const auto made = clock::now();
  std::vector<double> steps;
  for (int i = 0; i < 10; ++i) {
    const auto s0 = clock::now();
    Tensor loss = nn::cross_entropy(model(x), y);
    model = opt.step(std::move(model), backward(loss));
    sync(*device).get();
    steps.push_back(seconds(s0, clock::now()));
  }
  std::printf("device %s: opened in %.1f ms, model and batch made in %.1f ms\n", device_name(*device).c_str(),
              1e3 * seconds(start, opened), 1e3 * seconds(opened, made));
  for (std::size_t i = 0; i < steps.size(); ++i) std::printf("step %zu: %.2f ms\n", i + 1, 1e3 * steps[i]);
  std::printf("first_step_over_tenth %.1f\n", steps.front() / steps.back());
  return 0;
}
