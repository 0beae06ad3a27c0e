// The Learner's recorded training step (optim/recorded_step.h) for a loss-returning step on a
// data::Batch: the user's step, backward, the clipping and the optimizer's update recorded once
// per batch shape (the last, shorter batch of an epoch has its own) and replayed as one message
// a batch. The step function runs once, while it is recorded: what it does besides ops (counting
// its calls, host values it reads) happens then only, and the StepOutput's `items` is that call's.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/data/example.h"
#include "kiln/optim/recorded_step.h"
#include "kiln/train/gradient_update.h"
#include "kiln/train/step.h"

namespace kiln::train {

class RecordedBatchStep {
 public:
  using Step = std::function<StepOutput(const data::Batch& batch)>;

  // `model` and `opt` must outlive it.
  RecordedBatchStep(nn::Module& model, optim::Optimizer& opt, Step step, ClipOptions clip);

  // Whether a step of this optimizer can be recorded at all (Optimizer::recordable). Asked
  // before any recording, so that the step function is not called for nothing.
  static bool possible(const optim::Optimizer& opt);

  // The step on `batch` at learning rate `lr`, replayed (recorded first for a new batch shape);
  // nothing when the step cannot be recorded: the caller steps eagerly, and this gives up (the
  // reason goes to the log once).
  std::optional<StepOutput> run(const data::Batch& batch, double lr);

 private:
  struct Recorded {
    std::vector<char> fields;  // which of inputs, labels and targets the batch holds
    std::vector<Shape> shapes;
    // What the step returned, to rebuild its StepOutput from the replay's outputs.
    bool has_outputs = false, has_labels = false;
    std::vector<std::string> extra;
    std::int64_t items = 0;
    std::optional<optim::RecordedStep> step;
  };
  static constexpr std::size_t kMaxShapes = 4;

  nn::Module& model_;
  optim::Optimizer& opt_;
  Step step_;
  ClipOptions clip_;
  std::vector<std::unique_ptr<Recorded>> recorded_;  // stable: each step's forward fills its own
  bool given_up_ = false;
};

}  // namespace kiln::train
