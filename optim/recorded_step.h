// A whole training step — forward, backward, the optimizer's update — recorded once and replayed
// as one message per step, as CUDA graphs and torch.compile's reduce-overhead mode do: no
// per-op submission, autograd bookkeeping or planning per step (on the CPU the plan is made
// once, at the first replay).
//
//   optim::Adam opt({.lr = 1e-3});
//   optim::CosineAnnealingLr schedule(1e-3, 1000);
//   auto step = optim::RecordedStep::record(
//       model, opt, [](const MLP& m, const Tensor& x, const Tensor& y) { return nn::cross_entropy(m(x), y); },
//       x0, y0);                                  // example batch: its shapes, dtypes and device
//   for (...) {
//     Tensor loss = step(x, y, schedule.lr());   // model and opt now hold the updated values
//     schedule.step();
//   }
//
// What the recording's inputs and outputs are: the batch; every parameter and buffer of the
// module and the optimizer's moments, whose new values are rebound into the module and the
// optimizer after each call (handed over, so the update writes them in place when nothing else
// holds them, as an eager step with the module moved in does); and the numbers that change from
// step to step, computed on the host at each call from the learning rate and the step counts
// (Optimizer::step_numbers) and carried in the replay's message. A replayed step gives the same
// bits as the eager `backward` + `opt.step` it stands for.
//
// The step is recorded again, once, when the optimizer's state changes its form (SGD's
// momentum buffer is the first gradient: the first step is recorded as it is, the second as
// every later one; Adam makes its moments on its first step), or when the module's parameters,
// buffers or training modes change. A batch of other shapes is a kiln::Error. What cannot be
// recorded is a kiln::Error from record() (and from the call that records again) naming the op:
// reading a value in the step (`item()`, `to_vector`), a tensor made in the step kept beyond it,
// random values that every replay would draw the same (Dropout draws its masks anew at each
// replay, as an eager step would: engine's RedrawnSeeds), an optimizer that is not
// recordable(). The model and the optimizer must outlive the step; one thread drives a step (two
// steps of two models may run on two threads).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/engine/recorded_function.h"
#include "kiln/optim/optimizer.h"

namespace kiln::optim {

class RecordedStep {
 public:
  // The step's forward: from the batch (stand-ins while recording) to the loss (one element)
  // first, then any other tensors the caller wants back after each step (logits for metrics).
  using Forward = std::function<std::vector<Tensor>(const std::vector<Tensor>& batch)>;
  // What happens to the gradients between backward and the update (clipping): ops only.
  using GradientHook = std::function<void(Gradients& grads, const nn::Module& model)>;

  // Records the step on stand-ins of `example_batch` (nothing runs: kernels compile at the
  // first call), with the learning rate `opt.lr()`.
  static RecordedStep record(nn::Module& model, Optimizer& opt, Forward forward, const std::vector<Tensor>& example_batch,
                             GradientHook on_gradients = {});

  // loss_fn(model, x, y) -> the loss.
  template <class M, class LossFn>
    requires std::is_base_of_v<nn::Module, M>
  static RecordedStep record(M& model, Optimizer& opt, LossFn loss_fn, const Tensor& example_x, const Tensor& example_y) {
    Forward forward = [&model, loss_fn = std::move(loss_fn)](const std::vector<Tensor>& b) {
      return std::vector<Tensor>{loss_fn(static_cast<const M&>(model), b[0], b[1])};
    };
    return record(static_cast<nn::Module&>(model), opt, std::move(forward), {example_x, example_y});
  }

  // One step on `batch` at learning rate `lr`, submitted as one message: forward's outputs (the
  // loss first), the model and the optimizer updated.
  std::vector<Tensor> run(const std::vector<Tensor>& batch, double lr);
  Tensor operator()(const Tensor& x, const Tensor& y, double lr) { return run({x, y}, lr).front(); }

  // How many times the step was recorded (see the top), and the messages of the recording.
  std::int64_t recordings() const { return recordings_; }
  std::size_t size() const;

  RecordedStep(RecordedStep&&) noexcept;
  RecordedStep& operator=(RecordedStep&&) noexcept;
  ~RecordedStep();

 private:
  struct Recording;  // what a recording was made on, and where each value goes in and comes out
  struct Live;       // the module's fields and modes as they stand
  struct StandIns;   // the module and the optimizer holding the stand-ins while recording
  RecordedStep(nn::Module& model, Optimizer& opt, Forward forward, GradientHook on_gradients);

  // Records the step as the module and the optimizer stand now.
  void record_now(const std::vector<Tensor>& batch, double lr);
  // The recording's layout of the module and the optimizer as they stand, and its inputs' specs.
  std::unique_ptr<Recording> describe(const Live& live, const std::vector<Tensor>& batch,
                                      std::vector<RecordedFunction::Spec>& inputs) const;
  // What the recorded function does on its stand-ins: the step, then its outputs.
  std::vector<Tensor> record_body(Recording& r, const Live& live, double lr, std::vector<Tensor>& in,
                                  RecordedFunction::Recording& recording);
  bool matches(const Live& live) const;
  // A call: this step's numbers (host values), the inputs (taken out of the module and the
  // optimizer where the step replaces them), and the outputs rebound into them.
  std::vector<double> numbers_of(const Live& live, double lr) const;
  std::vector<Tensor> take_inputs(const Live& live, const std::vector<Tensor>& batch);
  void rebind(const Live& live, const std::vector<Tensor>& outs);

  nn::Module* model_;
  Optimizer* opt_;
  Forward forward_;
  GradientHook on_gradients_;
  std::unique_ptr<Recording> recording_;
  std::int64_t recordings_ = 0;
};

}  // namespace kiln::optim
