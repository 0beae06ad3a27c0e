#include "kiln/optim/optimizer.h"

#include <cmath>

#include "kiln/autograd/autograd.h"
#include "kiln/base/error.h"

namespace kiln::optim {

bool is_bias_or_norm(const std::string&, const Tensor& value) { return value.shape().rank() <= 1; }

Optimizer::Optimizer(double lr, double weight_decay) : lr_(lr), weight_decay_(weight_decay) {}

void Optimizer::check_option(bool ok, const std::string& what) const {
  KILN_CHECK(ok, name(), what);
}

std::vector<Tensor> Optimizer::initial_slots(const Tensor& param) const {
  std::vector<Tensor> slots;
  for (std::size_t i = 0; i < slot_names().size(); ++i) slots.push_back(zeros_like(param));
  return slots;
}

void Optimizer::add_group(ParamGroup group) {
  check_option(static_cast<bool>(group.selects), "a parameter group needs a selector");
  check_option(std::isfinite(group.lr_scale) && group.lr_scale >= 0,
               "a group's lr_scale must be finite and >= 0, got " + std::to_string(group.lr_scale));
  check_option(!group.weight_decay || *group.weight_decay >= 0,
               "a group's weight_decay must be >= 0, got " + std::to_string(group.weight_decay.value_or(0)));
  groups_.push_back(std::move(group));
}

const ParamGroup* Optimizer::group_of(const std::string& path, const Tensor& value) const {
  for (const ParamGroup& g : groups_)
    if (g.selects(path, value)) return &g;
  return nullptr;
}

namespace {

// Every trainable parameter of a module with its path, mutable: the update takes its value out.
class TrainableParameters : public nn::FieldVisitor {
 public:
  std::vector<std::pair<std::string, nn::Parameter*>> found;
  void parameter(const std::string& path, nn::Parameter& p) override {
    if (p.defined() && p.trainable()) found.emplace_back(path, &p);
  }
};

}  // namespace

void Optimizer::check_step(double lr, const nn::Module& module, const Gradients& grads) const {
  KILN_CHECK(std::isfinite(lr) && lr >= 0, name(), "the learning rate must be finite and >= 0, got " + std::to_string(lr));
  TrainableParameters params;
  module.visit(params);
  for (const auto& [path, p] : params.found) {
    if (grads.contains(p->value())) {
      const Tensor& g = grads.get(p->value());
      KILN_CHECK(g.shape() == p->shape() && g.device() == p->value().device(), name(),
                 path + ": the gradient is " + g.shape().str() + " on " + g.device().str() + ", the parameter " +
                     p->shape().str() + " on " + p->value().device().str());
    }
    auto it = params_.find(path);
    if (it == params_.end()) continue;
    for (std::size_t k = 0; k < it->second.slots.size(); ++k) {
      const Tensor& slot = it->second.slots[k];
      if (!slot.defined()) continue;
      KILN_CHECK(slot.shape() == p->shape() && slot.device() == p->value().device(), name(),
                 path + ": the optimizer's " + slot_names()[k] + " has shape " + slot.shape().str() + " on " +
                     slot.device().str() + ", the parameter " + p->shape().str() + " on " + p->value().device().str() +
                     " (a state saved for another model, or the module moved after its first step?)");
    }
  }
}

UpdateContext Optimizer::context_of(double lr, const std::string& path, const Tensor& value, std::int64_t step) const {
  const ParamGroup* group = group_of(path, value);
  UpdateContext ctx;
  ctx.lr = lr * (group ? group->lr_scale : 1.0);
  ctx.weight_decay = group && group->weight_decay ? *group->weight_decay : weight_decay_;
  ctx.step = step;
  ctx.path = &path;
  return ctx;
}

void Optimizer::apply_step(double lr, nn::Module& module, const Gradients& grads, const RecordedNumbers* recorded) {
  TrainableParameters params;
  module.visit(params);
  // No op of the update is recorded: the new values are leaves of the next forward pass.
  const NoGradGuard no_grad;
  ++steps_;
  std::vector<StepNumber> numbers;
  for (const auto& [path, p] : params.found) {
    if (!grads.contains(p->value())) continue;
    ParamState& st = params_[path];
    if (st.slots.empty()) st.slots = initial_slots(p->value());
    ++st.step;
    UpdateContext ctx = context_of(lr, path, p->value(), st.step);
    if (recorded) {
      numbers = (*recorded)(path, ctx);
    } else {
      numbers.clear();
      for (double v : step_numbers(ctx)) numbers.emplace_back(v);
    }
    ctx.numbers = &numbers;
    const Tensor grad = grads.get(p->value());
    p->set(update_parameter(ctx, p->take(), grad, st.slots));
  }
}

State Optimizer::state() const {
  State s;
  const std::vector<std::string> names = slot_names();
  for (const auto& [path, st] : params_) {
    s.numbers["step." + path] = static_cast<double>(st.step);
    for (std::size_t k = 0; k < st.slots.size() && k < names.size(); ++k)
      if (st.slots[k].defined()) s.tensors.push_back({names[k] + "." + path, st.slots[k]});
  }
  s.numbers["steps"] = static_cast<double>(steps_);
  return s;
}

void Optimizer::load_state(const State& state) {
  const std::vector<std::string> names = slot_names();
  std::map<std::string, ParamState> loaded;
  for (const auto& [key, value] : state.numbers) {
    if (key == "steps" || key.rfind("step.", 0) != 0) continue;
    KILN_CHECK(value >= 0 && value == std::floor(value), name(), "state: " + key + " must be a count, got " + std::to_string(value));
    ParamState& st = loaded[key.substr(5)];
    st.step = static_cast<std::int64_t>(value);
    st.slots.resize(names.size());
  }
  for (const nn::NamedTensor& t : state.tensors) {
    std::size_t slot = names.size();
    for (std::size_t k = 0; k < names.size(); ++k)
      if (t.name.size() > names[k].size() + 1 && t.name.compare(0, names[k].size() + 1, names[k] + ".") == 0) slot = k;
    KILN_CHECK(slot < names.size(), name(),
               "state: the tensor '" + t.name + "' is none of this optimizer's (a state saved by another optimizer?)");
    const std::string path = t.name.substr(names[slot].size() + 1);
    auto it = loaded.find(path);
    KILN_CHECK(it != loaded.end(), name(), "state: the tensor '" + t.name + "' has no step count 'step." + path + "'");
    it->second.slots[slot] = t.tensor;
  }
  // A parameter's moments are all made on its first update, so a state lacking one is damaged.
  for (const auto& [path, st] : loaded)
    for (std::size_t k = 0; k < names.size(); ++k)
      KILN_CHECK(st.slots[k].defined() || st.step == 0, name(),
                 "state: 'step." + path + "' has no tensor '" + names[k] + "." + path + "'");
  auto steps = state.numbers.find("steps");
  KILN_CHECK(steps != state.numbers.end() || state.empty(), name(), "state: no 'steps' count");
  params_ = std::move(loaded);
  steps_ = steps == state.numbers.end() ? 0 : static_cast<std::int64_t>(steps->second);
}

}  // namespace kiln::optim
