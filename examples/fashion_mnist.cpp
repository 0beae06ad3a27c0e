// kiln's main job: trains a small CNN on Fashion-MNIST (Debian's dataset-fashion-mnist package)
// with the Learner, saves it as safetensors, loads it back into a fresh model and classifies the
// test images through the futures API.
//
//   ./build/examples/fashion_mnist [--device cpu|vulkan] [--epochs 3] [--run-dir runs/fashion_mnist]
//                                  [--workers 1] [--data DIR] [--no-resume] [--help]
//
// The run folder gets the checkpoints (a second run resumes from the last; Ctrl-C writes one
// and exits), model.safetensors and report.html.
//
// Data-parallel on N processes: started by kiln-launch, it trains with each process on its shard
// of every epoch and a batch of 128 / N, the gradients averaged (rank 0 shows the dashboard and
// writes the checkpoints, the model and the report):
//
//   ./build/kiln-launch -n 2 --split-cpus -- ./build/examples/fashion_mnist bench/fashion_mnist_twin.py is the same model,
// loader settings and optimizer in PyTorch.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <kiln/data.h>
#include <kiln/dist.h>
#include "examples/fashion_mnist_model.h"
#include <kiln/io.h>
#include <kiln/nn.h>
#include <kiln/optim.h>
#include <kiln/train.h>

using namespace kiln;

struct Args {
  Device device = Device::cpu();
  std::int64_t epochs = 3;
  std::string run_dir = "runs/fashion_mnist";
  int workers = 1;
  std::filesystem::path data = data::kDebianFashionMnist;
  bool resume = true;
  bool help = false;
};

constexpr const char* kUsage = R"(usage: fashion_mnist [options]
Trains a small CNN on Fashion-MNIST with kiln's Learner, saves it, loads it back and classifies
the test set. A second run resumes from the last checkpoint; Ctrl-C finishes the step, writes a
checkpoint and exits.

  --device cpu|vulkan|vulkan:N  where to train (default cpu)
  --epochs N                    epochs to train (default 3)
  --run-dir DIR                 checkpoints, model.safetensors and report.html (default runs/fashion_mnist)
  --workers N                   loader threads (default 1; 0 loads on the training thread)
  --data DIR                    the IDX files, gzipped or not (default /usr/share/datasets/fashion-mnist,
                                from Debian's dataset-fashion-mnist package)
  --no-resume                   start from scratch even when the run folder has checkpoints
  --help                        this text
)";

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("fashion_mnist", arg + " needs a value");
      return argv[++i];
    };
    auto number = [&](long long least) -> long long {
      const std::string text = value();
      std::size_t used = 0;
      long long n = -1;
      try {
        n = std::stoll(text, &used);
      } catch (const std::exception&) {
      }
      if (used != text.size() || n < least)
        throw Error("fashion_mnist", arg + " takes a number of at least " + std::to_string(least) + ", got '" + text + "'");
      return n;
    };
    if (arg == "--device") {
      const std::string text = value();
      const std::optional<Device> d = parse_device(text);
      if (!d) throw Error("fashion_mnist", "--device takes cpu, vulkan or vulkan:N, got " + text);
      a.device = *d;
    }
    else if (arg == "--epochs") a.epochs = number(1);
    else if (arg == "--run-dir") a.run_dir = value();
    else if (arg == "--workers") a.workers = static_cast<int>(number(0));
    else if (arg == "--data") a.data = value();
    else if (arg == "--no-resume") a.resume = false;
    else if (arg == "--help" || arg == "-h") a.help = true;
    else throw Error("fashion_mnist", "unknown argument " + arg + " (--help lists them)");
  }
  return a;
}

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  if (args.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  manual_seed(0);

  // Fashion-MNIST's mean and std, as the twin normalizes (and examples/serve must).
  const data::Normalize normalize{{kFashionMnistMean}, {kFashionMnistStd}};
  const auto train_set = data::map(data::fashion_mnist(data::Split::train, args.data), normalize);
  const auto test_set = data::map(data::fashion_mnist(data::Split::test, args.data), normalize);
  const data::DataLoader test_loader(test_set, {.batch_size = 1000, .workers = args.workers, .device = args.device});

  // Under kiln-launch: one process of several, each training on its shard with 128 / N a batch.
  std::optional<dist::ProcessGroup> group;
  std::shared_ptr<dist::DataParallel> ddp;
  data::DatasetPtr<data::Example> train_items = train_set, valid_items = test_set;
  if (dist::launched_distributed()) {
    group.emplace(dist::ProcessGroup::from_env());
    ddp = std::make_shared<dist::DataParallel>(*group);
    auto shard = dist::shard(train_set, group->rank(), group->world_size(), {.seed = 0});
    ddp->follow_epochs(shard);
    train_items = shard;
    valid_items = dist::shard(test_set, group->rank(), group->world_size(), {.shuffle = false});
  }
  const int world = group ? group->world_size() : 1;
  const data::DataLoader train_loader(train_items, {.batch_size = 128 / world, .shuffle = !group, .seed = 0,
                                                    .workers = args.workers, .device = args.device});
  const data::DataLoader valid_loader(valid_items, {.batch_size = 1000 / world, .workers = args.workers,
                                                    .device = args.device});

  train::Learner learner(
      SmallCNN(args.device), std::make_unique<optim::Adam>(optim::AdamOptions{.lr = 1e-3}),  // a constant lr
      [](const SmallCNN& model, const data::Batch& batch) {
        Tensor logits = model(batch.inputs);
        return train::StepOutput{nn::cross_entropy(logits, batch.labels), logits, batch.labels, batch.size()};
      },
      {.epochs = args.epochs,
       .checkpoint_dir = args.run_dir + "/checkpoints",
       .resume = args.resume,
       .report = args.run_dir + "/report.html",
       .name = "Fashion-MNIST small CNN",
       .distributed = ddp});
  learner.add_metric(train::accuracy());
  const train::FitResult fit = learner.fit(train_loader, &valid_loader);
  if (fit.interrupted) {
    if (!group || group->is_main())
      std::printf("interrupted; run again to resume from %s\n", fit.checkpoint ? fit.checkpoint->c_str() : "the start");
    return 130;
  }
  if (group && !group->is_main()) return 0;  // rank 0 saves and evaluates the model

  // Save, then load into a fresh model: what a service would do.
  const std::string weights = args.run_dir + "/model.safetensors";
  io::save_model(learner.model(), weights);
  SmallCNN served(args.device);
  io::load_model(served, weights);
  served.eval();

  // Classify the test set through futures: every batch's predictions are submitted before the
  // first is read.
  const NoGradGuard no_grad;
  std::vector<Future<std::vector<std::int64_t>>> predicted, expected;
  for (const data::Batch& batch : test_loader.epoch(0)) {
    predicted.push_back(argmax(served(batch.inputs), 1).to_vector<std::int64_t>());
    expected.push_back(batch.labels.to_vector<std::int64_t>());
  }
  std::int64_t correct = 0, total = 0;
  for (std::size_t b = 0; b < predicted.size(); ++b) {
    const std::vector<std::int64_t> p = predicted[b].get(), y = expected[b].get();
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (b == 0 && i < 8)
        std::printf("test image %zu: predicted %-11s  actual %-11s %s\n", i, kFashionMnistClasses[p[i]],
                    kFashionMnistClasses[y[i]],
                    p[i] == y[i] ? "" : "(wrong)");
      correct += p[i] == y[i];
      ++total;
    }
  }
  std::printf("test accuracy of the loaded model: %.2f%% (%lld of %lld)\n", 100.0 * static_cast<double>(correct) / total,
              static_cast<long long>(correct), static_cast<long long>(total));
  std::printf("weights: %s\nreport:  %s\n", weights.c_str(), fit.report ? fit.report->c_str() : "-");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fashion_mnist: %s\n", e.what());
  return 1;
}
