// The training dashboard and the HTML report, driven by a simulated run (no model, made-up
// metrics) so you can see them in two seconds: run it in a terminal for the live view, or pipe
// it (`dashboard_demo | cat`) for the plain lines a log file gets. It prints where the report is.
//
//   dashboard_demo [report.html]
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include <kiln/train.h>

using namespace kiln;

int main(int argc, char** argv) {
  const std::filesystem::path report =
      argc > 1 ? std::filesystem::path(argv[1]) : std::filesystem::temp_directory_path() / "kiln_dashboard_demo.html";
  constexpr int kEpochs = 5, kTrainBatches = 30, kValidBatches = 8, kBatchSize = 64;

  const train::RunInfo run{.title = "dashboard demo",
                           .device = "cpu (simulated)",
                           .settings = {{"optimizer", "AdamW"},
                                        {"lr", "0.01"},
                                        {"batch size", std::to_string(kBatchSize)},
                                        {"epochs", std::to_string(kEpochs)}}};
  train::Dashboard dash;
  dash.set_better("learning rate", train::Better::neither);
  dash.begin_run(run);

  std::mt19937 random(7);
  std::normal_distribution<double> noise(0.0, 0.04);
  // A loss that falls like a real one, accuracy that rises, a cosine learning rate.
  auto loss_at = [&](double t) { return 0.25 + 2.0 * std::exp(-1.2 * t) + noise(random); };
  auto accuracy_at = [](double loss) { return std::clamp(1.0 - 0.4 * loss, 0.0, 1.0); };

  for (int epoch = 1; epoch <= kEpochs; ++epoch) {
    dash.begin_epoch(epoch, kEpochs);
    dash.begin_phase(train::Split::train, kTrainBatches);
    double loss_sum = 0, accuracy_sum = 0;
    for (int b = 1; b <= kTrainBatches; ++b) {
      const double t = (epoch - 1) + static_cast<double>(b) / kTrainBatches;
      const double loss = loss_at(t);
      loss_sum += loss, accuracy_sum += accuracy_at(loss);
      const double lr = 0.005 * (1 + std::cos(M_PI * t / kEpochs));
      dash.update(b, std::int64_t{b} * kBatchSize,
                  {{"loss", loss_sum / b}, {"accuracy", accuracy_sum / b}, {"learning rate", lr}});
      std::this_thread::sleep_for(std::chrono::milliseconds(11));
    }
    dash.end_phase({{"loss", loss_sum / kTrainBatches}, {"accuracy", accuracy_sum / kTrainBatches}});

    dash.begin_phase(train::Split::valid, kValidBatches);
    double valid_loss = 0;
    for (int b = 1; b <= kValidBatches; ++b) {
      valid_loss += loss_at(epoch) + 0.08;
      dash.update(b, std::int64_t{b} * kBatchSize,
                  {{"loss", valid_loss / b}, {"accuracy", accuracy_at(valid_loss / b)}});
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    valid_loss /= kValidBatches;
    dash.end_phase({{"loss", valid_loss}, {"accuracy", accuracy_at(valid_loss)}});
    if (epoch == 3) dash.message("checkpoint saved: epoch 3 (simulated)");
  }

  const train::RunOutcome outcome = dash.end_run({.status = "completed"});
  train::write_html_report(report, dash.run(), outcome, dash.history());
  std::cout << "report: " << report.string() << "\n";
}
