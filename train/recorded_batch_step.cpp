#include "kiln/train/recorded_batch_step.h"

#include "kiln/base/log.h"

namespace kiln::train {

namespace {

// The batch's tensors in a fixed order: inputs, labels, targets (each when defined).
std::vector<const Tensor*> batch_fields(const data::Batch& b) { return {&b.inputs, &b.labels, &b.targets}; }

}  // namespace

RecordedBatchStep::RecordedBatchStep(nn::Module& model, optim::Optimizer& opt, Step step, ClipOptions clip)
    : model_(model), opt_(opt), step_(std::move(step)), clip_(clip) {}

bool RecordedBatchStep::possible(const optim::Optimizer& opt) {
  return opt.recordable();
}

std::optional<StepOutput> RecordedBatchStep::run(const data::Batch& batch, double lr) {
  if (given_up_) return std::nullopt;
  std::vector<char> fields;
  std::vector<Shape> shapes;
  std::vector<Tensor> tensors;
  for (const Tensor* t : batch_fields(batch)) {
    fields.push_back(t->defined());
    if (!t->defined()) continue;
    shapes.push_back(t->shape());
    tensors.push_back(*t);
  }
  Recorded* r = nullptr;
  for (const std::unique_ptr<Recorded>& e : recorded_)
    if (e->fields == fields && e->shapes == shapes) r = e.get();
  if (!r) {
    if (recorded_.size() == kMaxShapes) return std::nullopt;  // batches of many shapes: eagerly
    auto entry = std::make_unique<Recorded>();
    entry->fields = fields;
    entry->shapes = shapes;
    Recorded& e = *entry;
    // The forward of the recorded step: the user's step on a batch of the stand-ins; its
    // StepOutput's tensors become the recording's outputs (the loss first).
    optim::RecordedStep::Forward forward = [this, &e](const std::vector<Tensor>& data) {
      data::Batch b;
      std::size_t next = 0;
      Tensor* slots[] = {&b.inputs, &b.labels, &b.targets};
      for (std::size_t i = 0; i < e.fields.size(); ++i)
        if (e.fields[i]) *slots[i] = data[next++];
      StepOutput out = step_(b);
      std::vector<Tensor> results{out.loss};
      e.has_outputs = out.outputs.defined();
      e.has_labels = out.labels.defined();
      if (e.has_outputs) results.push_back(out.outputs);
      if (e.has_labels) results.push_back(out.labels);
      e.extra.clear();
      for (const auto& [name, t] : out.extra) {
        e.extra.push_back(name);
        results.push_back(t);
      }
      e.items = out.items;
      return results;
    };
    try {
      e.step.emplace(optim::RecordedStep::record(
          model_, opt_, std::move(forward), tensors,
          [clip = clip_](Gradients& g, const nn::Module& m) { clip_gradients(g, m, clip); }));
    } catch (const Error& err) {
      given_up_ = true;
      logger().info("Learner: the training step is not recorded, it runs eagerly: {}", err.what());
      return std::nullopt;
    }
    recorded_.push_back(std::move(entry));
    r = &e;
  }
  std::vector<Tensor> outs;
  try {
    outs = r->step->run(tensors, lr);
  } catch (const Error& err) {
    // Recorded again (the optimizer's state changed its form) and that failed: nothing ran.
    given_up_ = true;
    logger().info("Learner: the training step is not recorded, it runs eagerly: {}", err.what());
    return std::nullopt;
  }
  StepOutput out;
  std::size_t next = 0;
  out.loss = outs[next++];
  if (r->has_outputs) out.outputs = outs[next++];
  if (r->has_labels) out.labels = outs[next++];
  for (const std::string& name : r->extra) out.extra[name] = outs[next++];
  out.items = r->items;
  return out;
}

}  // namespace kiln::train
