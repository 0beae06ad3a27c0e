#include "kiln/engine/recorded_function.h"

#include <atomic>
#include <cstring>

#include "kiln/engine/recorder.h"
#include "kiln/engine/runtime.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace detail {

namespace {
thread_local PassRecorder* t_recorder = nullptr;
}  // namespace

PassRecorder* recording_pass() { return t_recorder; }
void set_recording_pass(PassRecorder* recorder) { t_recorder = recorder; }

void PassRecorder::check_device(Device d, const char* op) const {
  KILN_CHECK(d == device, op,
             "a recorded pass runs on one device: it was recorded on " + device.str() + ", this op is on " + d.str());
}

void PassRecorder::keep_outside(const std::shared_ptr<TensorState>& s) {
  if (kept.insert(s->id).second) pass->outside.push_back(s);
}

void PassRecorder::made_here(const std::shared_ptr<TensorState>& s) {
  made.insert(s->id);
  made_states.push_back(s);
}

Tensor PassRecorder::stand_in(const Shape& shape, DType dtype) {
  // Made inside as far as the submission paths go: an op it is handed to last may take it over
  // (ReadWrite), and a drop of it is a message of the pass.
  auto s = std::make_shared<TensorState>(Engine::get().new_id(), shape, dtype, device);
  made.insert(s->id);
  stand_ins.push_back(s);
  return Tensor(std::move(s));
}

void PassRecorder::random_op(const OpIr& op) {
  if (!open_seed_scopes.empty()) {
    seed_scopes[open_seed_scopes.back()].ops.push_back(op.outputs[0].id);
    return;
  }
  if (fixed_random_ops++ == 0)
    first_fixed_random_op = std::string(op_name(op.kind)) + " " + dtype_name(op.outputs[0].dtype) + op.outputs[0].shape.str();
}

}  // namespace detail

RedrawnSeeds::RedrawnSeeds(std::function<Generator()> make) : recorder_(detail::recording_pass()) {
  if (!recorder_) return;
  recorder_->open_seed_scopes.push_back(recorder_->seed_scopes.size());
  recorder_->seed_scopes.push_back({std::move(make), {}});
}

RedrawnSeeds::~RedrawnSeeds() {
  if (recorder_ && detail::recording_pass() == recorder_ && !recorder_->open_seed_scopes.empty())
    recorder_->open_seed_scopes.pop_back();
}

namespace {

// Sets this thread's recorder for a scope; a recording inside a recording is an error.
class RecordingScope {
 public:
  RecordingScope(detail::PassRecorder& r, const std::string& where) {
    KILN_CHECK(detail::recording_pass() == nullptr, where, "a recording cannot be made inside another");
    detail::set_recording_pass(&r);
  }
  ~RecordingScope() { detail::set_recording_pass(nullptr); }
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;
};

// The handle that owns a tensor's entity (an autograd graph handle shares its owner's entity).
detail::TensorState& entity_owner(const Tensor& t) {
  const std::shared_ptr<detail::TensorState>& s = t.state();
  return s->owner ? *s->owner : *s;
}

std::string spec_str(DType dtype, const Shape& shape) { return std::string(dtype_name(dtype)) + shape.str(); }

}  // namespace

Tensor RecordedFunction::Recording::host_input(const Shape& shape, DType dtype) {
  Tensor t = recorder_.stand_in(shape, dtype);
  recorder_.pass->host_inputs.push_back(TensorIr{t.id(), shape, dtype, TensorStatus::ReadOnly});
  return t;
}

RecordedFunction RecordedFunction::record(const Function& fn, const std::vector<Spec>& inputs, Device device,
                                          RecordingOptions options) {
  const std::string& where = options.record_name;
  KILN_CHECK(static_cast<bool>(fn), where, "no function to record");
  detail::PassRecorder recorder;
  recorder.device = device;
  recorder.gradients = options.gradients;
  recorder.pass = std::make_shared<RecordedOps>();
  RecordedFunction result;
  result.inputs_ = inputs;
  result.device_ = device;
  result.name_ = std::move(options.name);
  {
    const RecordingScope scope(recorder, where);
    std::vector<Tensor> stand_ins;
    stand_ins.reserve(inputs.size());
    for (const Spec& in : inputs) {
      stand_ins.push_back(recorder.stand_in(in.shape, in.dtype));
      recorder.pass->inputs.push_back(stand_ins.back().id());
    }
    Recording recording(recorder);
    std::vector<Tensor> outs = fn(stand_ins, recording);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const Tensor& y = outs[k];
      KILN_CHECK(y.defined(), where, "the function's output #" + std::to_string(k) + " is an undefined tensor");
      KILN_CHECK(recorder.made_inside(y.id()), where,
                 "the function's output #" + std::to_string(k) + " (" + spec_str(y.dtype(), y.shape()) +
                     ") is a tensor from outside it: a recording returns only what it makes, or its inputs");
      // The result stays on the device until a replay hands it to its caller: no drop.
      entity_owner(y).consumed = true;
      recorder.pass->outputs.push_back(y.id());
      result.outputs_.push_back(Spec{y.shape(), y.dtype()});
    }
    outs.clear();
    // The stand-ins the function left here: the executor lets go of every stand-in after a replay.
    for (Tensor& t : stand_ins)
      if (t.defined()) entity_owner(t).consumed = true;
    stand_ins.clear();
    for (const TensorIr& h : recorder.pass->host_inputs) result.host_bytes_ += h.bytes();
  }
  for (detail::PassRecorder::SeedScope& scope : recorder.seed_scopes) {
    if (scope.ops.empty()) continue;
    result.seed_sources_.push_back({std::move(scope.make), scope.ops.size()});
    recorder.pass->reseeded.insert(recorder.pass->reseeded.end(), scope.ops.begin(), scope.ops.end());
  }
  result.fixed_random_ops_ = recorder.fixed_random_ops;
  result.first_fixed_random_op_ = recorder.first_fixed_random_op;
  for (const std::weak_ptr<detail::TensorState>& w : recorder.made_states)
    if (const std::shared_ptr<detail::TensorState> s = w.lock())
      KILN_CHECK(false, where,
                 "the function keeps a tensor it made (" + spec_str(s->dtype, s->shape) +
                     ") beyond the call: a recording holds no state between calls");
  for (std::size_t i = 0; i < recorder.stand_ins.size(); ++i)
    if (const std::shared_ptr<detail::TensorState> s = recorder.stand_ins[i].lock())
      KILN_CHECK(false, where,
                 "the function keeps its " +
                     (i < inputs.size() ? "input #" + std::to_string(i) : "host input #" + std::to_string(i - inputs.size())) +
                     " (" + spec_str(s->dtype, s->shape) + ") beyond the call: each call brings its own");
  result.ops_ = std::move(recorder.pass);
  return result;
}

std::size_t RecordedFunction::size() const { return ops_ ? ops_->ops.size() : 0; }

std::vector<std::byte> RecordedFunction::f32_values(const std::vector<double>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto v = static_cast<float>(values[i]);  // as a scalar operand of an f32 op is rounded
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
  }
  return bytes;
}

std::vector<Tensor> RecordedFunction::operator()(std::vector<Tensor> inputs, std::vector<std::byte> host_values) const {
  const std::string& where = name_;
  KILN_CHECK(ops_ != nullptr, where, "the recording was moved from");
  KILN_CHECK(inputs.size() == inputs_.size(), where,
             "recorded with " + std::to_string(inputs_.size()) + " inputs, called with " + std::to_string(inputs.size()));
  KILN_CHECK(host_values.size() == host_bytes_, where,
             "recorded with " + std::to_string(host_bytes_) + " bytes of host inputs, called with " +
                 std::to_string(host_values.size()));
  KILN_CHECK(detail::recording_pass() == nullptr, where, "a recording cannot run inside a recording");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    KILN_CHECK(x.defined(), where, "input #" + std::to_string(i) + " is an undefined tensor");
    const Spec& spec = inputs_[i];
    KILN_CHECK(x.shape() == spec.shape && x.dtype() == spec.dtype && x.device() == device_, where,
               "input #" + std::to_string(i) + ": recorded on " + spec_str(spec.dtype, spec.shape) + " on " +
                   device_.str() + ", called on " + spec_str(x.dtype(), x.shape()) + " on " + x.device().str());
  }
  DeviceRuntime& rt = Engine::get().runtime(device_, where.c_str());
  std::uint64_t bytes = 0;
  for (const Spec& o : outputs_) bytes += static_cast<std::uint64_t>(o.shape.numel()) * dtype_size(o.dtype);
  rt.stream.admit(bytes, where.c_str());

  OpIr op;
  op.kind = OpKind::replay;
  op.inputs.reserve(inputs.size());
  // An input handed over with its last handle lends its buffer to the replay (see the top); the
  // fence pairs with the release in other handles' destruction, as in the submission path.
  for (const Tensor& x : inputs) {
    const std::shared_ptr<detail::TensorState>& s = x.state();
    const bool last = s.use_count() == 1 && (!s->owner || s->owner.use_count() == 1);
    op.inputs.push_back(TensorIr{s->id, s->shape, s->dtype, last ? TensorStatus::ReadWrite : TensorStatus::ReadOnly});
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (op.inputs[i].status == TensorStatus::ReadWrite) entity_owner(inputs[i]).consumed = true;
  // The random ops' seeds of this call, after the host values.
  for (const SeedSource& source : seed_sources_) {
    Generator gen = source.make();
    for (std::size_t k = 0; k < source.ops; ++k) {
      const std::uint64_t seed = gen.next_draw();
      const std::size_t at = host_values.size();
      host_values.resize(at + sizeof seed);
      std::memcpy(host_values.data() + at, &seed, sizeof seed);
    }
  }
  if (!host_values.empty()) {
    auto held = std::make_shared<const std::vector<std::byte>>(std::move(host_values));
    op.host_data = std::shared_ptr<const std::byte>(held, held->data());
  }
  std::vector<Tensor> outs;
  outs.reserve(outputs_.size());
  Engine& engine = Engine::get();
  for (const Spec& o : outputs_) {
    const EntityId id = engine.new_id();
    op.outputs.push_back(TensorIr{id, o.shape, o.dtype, TensorStatus::NotInit});
    outs.emplace_back(std::make_shared<detail::TensorState>(id, o.shape, o.dtype, device_));
  }
  op.recorded = ops_;
  rt.stream.submit(std::move(op), Flush::later);
  return outs;
}

}  // namespace kiln
