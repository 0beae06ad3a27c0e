#include "kiln/optim/recorded_step.h"

#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include "kiln/autograd/autograd.h"
#include "kiln/base/error.h"
#include "kiln/engine/recorded_function.h"

namespace kiln::optim {

namespace {

constexpr const char* kRecord = "RecordedStep::record";
constexpr const char* kCall = "recorded step";

std::string spec_str(DType dtype, const Shape& shape) { return std::string(dtype_name(dtype)) + shape.str(); }

}  // namespace

// The module as it stands: its parameters and buffers in field order, and its modes.
struct RecordedStep::Live {
  struct Field {
    std::string path;
    nn::Parameter* param = nullptr;  // one of the two
    nn::Buffer* buffer = nullptr;
    Tensor value() const { return param ? param->value() : buffer->get(); }
  };
  std::vector<Field> fields;
  std::vector<char> modes;

  explicit Live(nn::Module& model) {
    struct Collect final : nn::FieldVisitor {
      Live& live;
      explicit Collect(Live& l) : live(l) {}
      void parameter(const std::string& path, nn::Parameter& p) override { live.fields.push_back({path, &p, nullptr}); }
      void buffer(const std::string& path, nn::Buffer& b) override { live.fields.push_back({path, nullptr, &b}); }
      bool enter(const std::string&, nn::Module& m) override {
        live.modes.push_back(m.is_training());
        return true;
      }
    } collect(*this);
    modes.push_back(model.is_training());
    model.visit(collect);
  }
};

// What a recording was made on, and where each value goes in and comes out.
struct RecordedStep::Recording {
  struct Field {
    std::string path;
    bool is_parameter = false;
    bool trainable = false;
    bool defined = false;
    Shape shape;
    DType dtype = DType::f32;
    Device device;
    int input = -1;   // its stand-in among the inputs (defined fields)
    int output = -1;  // its new value among the outputs; -1: the step leaves it
    // A trainable parameter's moments in the optimizer: which were defined (none: no state yet),
    // their stand-ins among the inputs.
    std::vector<char> slots_defined;
    std::vector<int> slot_inputs;
  };
  struct Updated {  // a parameter the step updates, in the order of the update
    std::string path;
    std::size_t field = 0;
    std::size_t numbers = 0;       // its step numbers: host inputs, in this order
    std::vector<int> slot_outputs;  // its new moments among the outputs (-1: undefined)
  };

  std::optional<RecordedFunction> function;
  std::vector<RecordedFunction::Spec> batch;
  std::vector<Field> fields;
  std::vector<char> modes;
  std::vector<Updated> updated;
  std::size_t user_outputs = 0;
};

RecordedStep::RecordedStep(nn::Module& model, Optimizer& opt, Forward forward, GradientHook on_gradients)
    : model_(&model), opt_(&opt), forward_(std::move(forward)), on_gradients_(std::move(on_gradients)) {}
RecordedStep::RecordedStep(RecordedStep&&) noexcept = default;
RecordedStep& RecordedStep::operator=(RecordedStep&&) noexcept = default;
RecordedStep::~RecordedStep() = default;

std::size_t RecordedStep::size() const { return recording_ && recording_->function ? recording_->function->size() : 0; }

RecordedStep RecordedStep::record(nn::Module& model, Optimizer& opt, Forward forward,
                                  const std::vector<Tensor>& example_batch, GradientHook on_gradients) {
  KILN_CHECK(static_cast<bool>(forward), kRecord, "no forward function");
  KILN_CHECK(!example_batch.empty(), kRecord, "the example batch holds no tensor");
  for (std::size_t i = 0; i < example_batch.size(); ++i)
    KILN_CHECK(example_batch[i].defined(), kRecord, "the example batch's tensor #" + std::to_string(i) + " is undefined");
  KILN_CHECK(opt.recordable(), kRecord,
             std::string(opt.name()) +
                 " does not take the numbers that change from step to step as step_numbers (Optimizer::recordable): "
                 "its steps cannot be recorded");
  RecordedStep step(model, opt, std::move(forward), std::move(on_gradients));
  step.record_now(example_batch, opt.lr());
  return step;
}

bool RecordedStep::matches(const Live& live) const {
  const Recording& r = *recording_;
  if (live.fields.size() != r.fields.size() || live.modes != r.modes) return false;
  for (std::size_t i = 0; i < live.fields.size(); ++i) {
    const Live::Field& l = live.fields[i];
    const Recording::Field& f = r.fields[i];
    const Tensor v = l.value();
    if (l.path != f.path || (l.param != nullptr) != f.is_parameter || v.defined() != f.defined) return false;
    if (!v.defined()) continue;
    if (v.shape() != f.shape || v.dtype() != f.dtype || v.device() != f.device) return false;
    if (!l.param) continue;
    if (l.param->trainable() != f.trainable) return false;
    if (!f.trainable) continue;
    // The optimizer's moments: the same ones defined as when recorded.
    const auto it = opt_->params_.find(f.path);
    const std::size_t n = it == opt_->params_.end() ? 0 : it->second.slots.size();
    if (n != f.slots_defined.size()) return false;
    for (std::size_t k = 0; k < n; ++k) {
      const Tensor& s = it->second.slots[k];
      if (s.defined() != static_cast<bool>(f.slots_defined[k])) return false;
      if (s.defined() && (s.shape() != f.shape || s.dtype() != f.dtype || s.device() != f.device)) return false;
    }
  }
  return true;
}

std::unique_ptr<RecordedStep::Recording> RecordedStep::describe(const Live& live, const std::vector<Tensor>& batch,
                                                                std::vector<RecordedFunction::Spec>& inputs) const {
  auto r = std::make_unique<Recording>();
  r->modes = live.modes;
  for (const Tensor& t : batch) inputs.push_back({t.shape(), t.dtype()});
  r->batch = inputs;
  const Device device = batch.front().device();
  std::map<EntityId, std::string> entities;  // a tensor two fields hold (tied weights)
  for (const Live::Field& l : live.fields) {
    Recording::Field f;
    f.path = l.path;
    f.is_parameter = l.param != nullptr;
    f.trainable = l.param && l.param->trainable();
    const Tensor v = l.value();
    f.defined = v.defined();
    if (f.defined) {
      f.shape = v.shape();
      f.dtype = v.dtype();
      f.device = v.device();
      KILN_CHECK(f.device == device, kRecord,
                 l.path + " is on " + f.device.str() + ", the batch on " + device.str() + ": a step runs on one device");
      const auto [it, first] = entities.emplace(v.id(), l.path);
      KILN_CHECK(first, kRecord,
                 l.path + " holds the tensor " + it->second +
                     " holds (tied weights): a recorded step gives each field a value of its own; step eagerly");
      f.input = static_cast<int>(inputs.size());
      inputs.push_back({f.shape, f.dtype});
    }
    if (const auto it = opt_->params_.find(l.path); f.defined && f.trainable && it != opt_->params_.end()) {
      for (const Tensor& s : it->second.slots) {
        f.slots_defined.push_back(s.defined());
        f.slot_inputs.push_back(s.defined() ? static_cast<int>(inputs.size()) : -1);
        if (s.defined()) inputs.push_back({s.shape(), s.dtype()});
      }
    }
    r->fields.push_back(std::move(f));
  }
  return r;
}

// While the step is recorded, the module's fields and the optimizer's moments hold the stand-ins
// (each the only handle of its stand-in, so an update handed the value writes it in place); when
// this goes, the module and the optimizer get their own values, counts and Dropout call counts
// back, also when the step throws.
struct RecordedStep::StandIns {
  nn::Module& model;
  Optimizer& opt;
  const Live& live;
  std::vector<nn::Parameter> params;
  std::vector<Tensor> buffers;
  std::map<std::string, Optimizer::ParamState> opt_params;
  std::int64_t opt_steps;
  std::map<std::string, std::uint64_t> draws;
  std::vector<EntityId> ids;  // each field's stand-in (0: undefined)

  StandIns(nn::Module& m, Optimizer& o, const Live& l, const Recording& r, std::vector<Tensor>& in)
      : model(m), opt(o), live(l), opt_params(o.params_), opt_steps(o.steps_), draws(nn::random_draws_by_path(m)),
        ids(l.fields.size(), 0) {
    for (const Live::Field& f : live.fields) {
      params.push_back(f.param ? *f.param : nn::Parameter());
      buffers.push_back(f.param ? Tensor() : f.buffer->get());
    }
    for (std::size_t i = 0; i < live.fields.size(); ++i) {
      const Recording::Field& f = r.fields[i];
      if (f.input < 0) continue;
      Tensor s = std::move(in[static_cast<std::size_t>(f.input)]);
      ids[i] = s.id();
      if (live.fields[i].param) live.fields[i].param->set(s);
      else live.fields[i].buffer->set(s);
      for (std::size_t k = 0; k < f.slot_inputs.size(); ++k)
        if (f.slot_inputs[k] >= 0) opt.params_[f.path].slots[k] = std::move(in[static_cast<std::size_t>(f.slot_inputs[k])]);
    }
  }
  ~StandIns() {
    for (std::size_t i = 0; i < live.fields.size(); ++i) {
      if (live.fields[i].param) *live.fields[i].param = params[i];
      else if (buffers[i].defined()) live.fields[i].buffer->set(buffers[i]);
    }
    opt.params_ = std::move(opt_params);
    opt.steps_ = opt_steps;
    nn::restore_random_draws(model, draws);
  }
  StandIns(const StandIns&) = delete;
  StandIns& operator=(const StandIns&) = delete;
};

std::vector<Tensor> RecordedStep::record_body(Recording& r, const Live& live, double lr, std::vector<Tensor>& in,
                                              RecordedFunction::Recording& recording) {
  nn::Module& model = *model_;
  Optimizer& opt = *opt_;
  const StandIns stand_ins(model, opt, live, r, in);
  const std::vector<Tensor> batch(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(r.batch.size()));
  std::vector<Tensor> result = forward_(batch);
  KILN_CHECK(!result.empty() && result.front().defined(), kRecord, "the forward function returned no loss");
  for (std::size_t k = 1; k < result.size(); ++k)
    KILN_CHECK(result[k].defined(), kRecord, "the forward function's output #" + std::to_string(k) + " is undefined");
  r.user_outputs = result.size();
  {
    Gradients grads = backward(result.front());
    if (on_gradients_) on_gradients_(grads, model);
    // Each updated parameter's step numbers: host inputs, which every call fills.
    const Optimizer::RecordedNumbers numbers = [&](const std::string& path, const UpdateContext& ctx) {
      Recording::Updated u;
      u.path = path;
      for (std::size_t i = 0; i < live.fields.size(); ++i)
        if (live.fields[i].param && live.fields[i].path == path) u.field = i;
      u.numbers = opt.step_numbers(ctx).size();
      std::vector<StepNumber> out;
      for (std::size_t k = 0; k < u.numbers; ++k) out.emplace_back(recording.host_input({}, DType::f32));
      r.updated.push_back(std::move(u));
      return out;
    };
    opt.apply_step(lr, model, grads, &numbers);
  }
  // Outputs after forward's: the fields the step replaced, then the updated moments.
  for (std::size_t i = 0; i < live.fields.size(); ++i) {
    Recording::Field& f = r.fields[i];
    const Tensor now = live.fields[i].value();
    if (!now.defined() || now.id() == stand_ins.ids[i]) continue;
    KILN_CHECK(f.defined && now.shape() == f.shape && now.dtype() == f.dtype, kRecord,
               f.path + ": the step made it " + spec_str(now.dtype(), now.shape()) + " from " +
                   (f.defined ? spec_str(f.dtype, f.shape) : std::string("undefined")) +
                   ": a step keeps its parameters' and buffers' shapes");
    f.output = static_cast<int>(result.size());
    result.push_back(now);
  }
  for (Recording::Updated& u : r.updated) {
    for (const Tensor& s : opt.params_.at(u.path).slots) {
      u.slot_outputs.push_back(s.defined() ? static_cast<int>(result.size()) : -1);
      if (s.defined()) result.push_back(s);
    }
  }
  return result;
}

void RecordedStep::record_now(const std::vector<Tensor>& batch, double lr) {
  const Live live(*model_);
  std::vector<RecordedFunction::Spec> inputs;
  std::unique_ptr<Recording> r = describe(live, batch, inputs);
  RecordingOptions options;
  options.name = kCall;
  options.record_name = kRecord;
  try {
    r->function = RecordedFunction::record(
        [&](std::vector<Tensor>& in, RecordedFunction::Recording& recording) {
          return record_body(*r, live, lr, in, recording);
        },
        inputs, batch.front().device(), options);
  } catch (const Error& e) {
    if (e.op() == kRecord) throw;
    // An op's own error (item: ... cannot read values): named, and said to come from the recording.
    throw Error(kRecord, std::string(e.what()) + " (while recording a training step)");
  }
  // Dropout redraws its masks at every replay (RedrawnSeeds); other random draws would repeat.
  KILN_CHECK(r->function->fixed_random_ops() == 0, kRecord,
             "the step draws random values (" + r->function->first_fixed_random_op() +
                 ") that every replay would draw again, the same: draw them under a RedrawnSeeds (as Dropout "
                 "does), or step eagerly");
  recording_ = std::move(r);
  ++recordings_;
}

std::vector<double> RecordedStep::numbers_of(const Live& live, double lr) const {
  std::vector<double> numbers;
  for (const Recording::Updated& u : recording_->updated) {
    const auto it = opt_->params_.find(u.path);
    const std::int64_t step = it == opt_->params_.end() ? 1 : it->second.step + 1;
    // The same code as an eager step's, at the count that step would reach.
    const UpdateContext ctx = opt_->context_of(lr, u.path, live.fields[u.field].value(), step);
    const std::vector<double> v = opt_->step_numbers(ctx);
    KILN_CHECK(v.size() == u.numbers, kCall,
               std::string(opt_->name()) + ": " + u.path + " took " + std::to_string(v.size()) +
                   " step numbers, recorded with " + std::to_string(u.numbers));
    numbers.insert(numbers.end(), v.begin(), v.end());
  }
  return numbers;
}

std::vector<Tensor> RecordedStep::take_inputs(const Live& live, const std::vector<Tensor>& batch) {
  const Recording& r = *recording_;
  std::vector<Tensor> in = batch;
  in.resize(r.function->inputs().size());
  for (std::size_t i = 0; i < r.fields.size(); ++i) {
    const Recording::Field& f = r.fields[i];
    if (f.input < 0) continue;
    const Live::Field& l = live.fields[i];
    const bool replaced = f.output >= 0;
    Tensor& slot = in[static_cast<std::size_t>(f.input)];
    if (!replaced) {
      slot = l.value();
    } else if (l.param) {
      slot = l.param->take();
    } else {
      slot = l.buffer->get();
      l.buffer->set(Tensor());
    }
    if (f.slot_inputs.empty()) continue;
    std::vector<Tensor>& slots = opt_->params_.at(f.path).slots;
    for (std::size_t k = 0; k < f.slot_inputs.size(); ++k)
      if (f.slot_inputs[k] >= 0) in[static_cast<std::size_t>(f.slot_inputs[k])] = replaced ? std::move(slots[k]) : slots[k];
  }
  return in;
}

void RecordedStep::rebind(const Live& live, const std::vector<Tensor>& outs) {
  const Recording& r = *recording_;
  for (std::size_t i = 0; i < r.fields.size(); ++i) {
    const Recording::Field& f = r.fields[i];
    if (f.output < 0) continue;
    const Live::Field& l = live.fields[i];
    if (l.param) l.param->set(outs[static_cast<std::size_t>(f.output)]);
    else l.buffer->set(outs[static_cast<std::size_t>(f.output)]);
  }
  for (const Recording::Updated& u : r.updated) {
    Optimizer::ParamState& st = opt_->params_[u.path];
    st.slots.resize(u.slot_outputs.size());
    for (std::size_t k = 0; k < u.slot_outputs.size(); ++k)
      st.slots[k] = u.slot_outputs[k] >= 0 ? outs[static_cast<std::size_t>(u.slot_outputs[k])] : Tensor();
    ++st.step;
  }
  ++opt_->steps_;
}

std::vector<Tensor> RecordedStep::run(const std::vector<Tensor>& batch, double lr) {
  KILN_CHECK(recording_ != nullptr, kCall, "the step was moved from");
  KILN_CHECK(std::isfinite(lr) && lr >= 0, kCall, "the learning rate must be finite and >= 0, got " + std::to_string(lr));
  const std::vector<RecordedFunction::Spec>& specs = recording_->batch;
  KILN_CHECK(batch.size() == specs.size(), kCall,
             "recorded on a batch of " + std::to_string(specs.size()) + " tensors, called with " +
                 std::to_string(batch.size()));
  for (std::size_t i = 0; i < batch.size(); ++i)
    KILN_CHECK(batch[i].defined() && batch[i].shape() == specs[i].shape && batch[i].dtype() == specs[i].dtype, kCall,
               "the batch's tensor #" + std::to_string(i) + " is " +
                   (batch[i].defined() ? spec_str(batch[i].dtype(), batch[i].shape()) : std::string("undefined")) +
                   ", recorded on " + spec_str(specs[i].dtype, specs[i].shape) +
                   ": record a step for each batch shape (the last, shorter batch of an epoch too)");
  std::optional<Live> live(std::in_place, *model_);
  if (!matches(*live)) {
    record_now(batch, lr);
    live.emplace(*model_);
  }
  // Everything that can fail is checked before a value leaves the module or the optimizer.
  std::vector<double> numbers = numbers_of(*live, lr);
  std::vector<Tensor> outs = (*recording_->function)(take_inputs(*live, batch), RecordedFunction::f32_values(numbers));
  rebind(*live, outs);
  outs.resize(recording_->user_outputs);
  return outs;
}

}  // namespace kiln::optim
