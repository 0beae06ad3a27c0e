#include "kiln/engine/recorded_pass.h"

#include <unordered_set>

#include "kiln/engine/creation.h"
#include "kiln/engine/recorder.h"
#include "kiln/engine/runtime.h"

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

}  // namespace detail

namespace {

// Sets this thread's recorder for a scope; a recording inside a recording is an error.
class RecordingScope {
 public:
  explicit RecordingScope(detail::PassRecorder& r) {
    KILN_CHECK(detail::recording_pass() == nullptr, "RecordedPass::record", "a pass cannot be recorded inside another");
    detail::set_recording_pass(&r);
  }
  ~RecordingScope() { detail::set_recording_pass(nullptr); }
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;
};

}  // namespace

RecordedPass RecordedPass::record(const std::function<Tensor(const Tensor&)>& forward, const Shape& shape, DType dtype,
                                  Device device) {
  const char* where = "RecordedPass::record";
  KILN_CHECK(static_cast<bool>(forward), where, "no function to record");
  // Once for real: caches the function fills on its first call (nn::Linear's transposed weight)
  // are filled outside the recording, and its kernels are compiled.
  forward(zeros(shape, TensorOptions{dtype, device}));

  detail::PassRecorder recorder;
  recorder.device = device;
  recorder.pass = std::make_shared<RecordedOps>();
  RecordedPass result;
  result.input_shape_ = shape;
  result.input_dtype_ = dtype;
  result.device_ = device;
  {
    // The stand-in input: an entity no message makes, read by the pass's ops in place of each
    // replay's input.
    auto stand_in = std::make_shared<detail::TensorState>(Engine::get().new_id(), shape, dtype, device);
    stand_in->consumed = true;  // never on the device: nothing to drop
    recorder.keep_outside(stand_in);
    recorder.pass->input = stand_in->id;
    Tensor y;
    {
      const RecordingScope scope(recorder);
      y = forward(Tensor(stand_in));
      KILN_CHECK(y.defined(), where, "the function returned an undefined tensor");
      KILN_CHECK(recorder.made_inside(y.state()->id), where,
                 "the function returned a tensor it did not make (its input, or one from outside): nothing to record");
      // The result stays alive on the device until a replay hands it to its caller.
      y.state()->consumed = true;
      result.output_shape_ = y.shape();
      result.output_dtype_ = y.dtype();
      recorder.pass->output = y.state()->id;
      y = Tensor();
    }
    for (const std::weak_ptr<detail::TensorState>& w : recorder.made_states)
      if (const std::shared_ptr<detail::TensorState> s = w.lock())
        KILN_CHECK(false, where,
                   "the function keeps a tensor it made (" + std::string(dtype_name(s->dtype)) + s->shape.str() +
                       ") beyond the call: a recorded pass holds no state between calls");
  }
  result.ops_ = std::move(recorder.pass);
  return result;
}

Tensor RecordedPass::operator()(const Tensor& x) const {
  const char* where = "recorded pass";
  KILN_CHECK(ops_ != nullptr, where, "the pass was moved from");
  KILN_CHECK(x.defined(), where, "the input is an undefined tensor");
  const detail::TensorState& s = *x.state();
  KILN_CHECK(s.shape == input_shape_ && s.dtype == input_dtype_ && s.device == device_, where,
             "recorded on " + std::string(dtype_name(input_dtype_)) + input_shape_.str() + " on " + device_.str() +
                 ", called on " + dtype_name(s.dtype) + s.shape.str() + " on " + s.device.str());
  KILN_CHECK(s.autograd == nullptr, where,
             "the input takes part in a backward graph: a recorded pass takes no gradients");
  KILN_CHECK(detail::recording_pass() == nullptr, where, "a recorded pass cannot run inside a recording");
  DeviceRuntime& rt = Engine::get().runtime(device_, where);
  rt.stream.admit(static_cast<std::uint64_t>(output_shape_.numel()) * dtype_size(output_dtype_), where);
  OpIr op;
  op.kind = OpKind::replay;
  op.inputs.push_back(TensorIr{s.id, s.shape, s.dtype, TensorStatus::ReadOnly});
  const EntityId id = Engine::get().new_id();
  op.outputs.push_back(TensorIr{id, output_shape_, output_dtype_, TensorStatus::NotInit});
  op.recorded = ops_;
  Tensor out(std::make_shared<detail::TensorState>(id, output_shape_, output_dtype_, device_));
  rt.stream.submit(std::move(op), Flush::later);
  return out;
}

}  // namespace kiln
