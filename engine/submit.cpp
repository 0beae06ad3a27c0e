#include "kiln/engine/submit.h"

#include <atomic>

#include "kiln/engine/recorder.h"
#include "kiln/engine/runtime.h"
#include "kiln/ops/registry.h"

namespace kiln::detail {

TensorState::~TensorState() {
  if (consumed || !Engine::alive()) return;
  OpIr op;
  op.kind = OpKind::drop;
  op.inputs.push_back(TensorIr{id, {}, dtype, TensorStatus::ReadWrite});
  // A value made inside a pass being recorded dies inside it; any other goes to its stream.
  if (PassRecorder* rec = recording_pass(); rec && rec->made_inside(id)) [[unlikely]] {
    rec->add(std::move(op));
    return;
  }
  Engine::get().runtime(device, "drop").stream.submit(std::move(op), Flush::later);
}

namespace {

std::atomic<const AutogradHooks*> g_autograd_hooks{nullptr};

bool core_dtype(DType t) { return t == DType::f32 || t == DType::i64 || t == DType::bool_; }

// f16 and bf16 exist only on devices that have them (the shape rules accept them for the ops
// that can run on them): a clear error on the caller's thread, naming the op and the device.
void check_device_dtypes(const char* name, const OpIr& op, const TensorList& outs, const DeviceRuntime& rt) {
  auto check = [&](DType t) {
    if (core_dtype(t) || rt.backend->supports(t)) return;
    std::string tensors;
    for (const TensorIr& in : op.inputs) tensors += (tensors.empty() ? "" : ", ") + describe(in);
    for (const TensorIr& o : outs) tensors += std::string(tensors.empty() ? "" : " -> ") + describe(o);
    throw Error(name, std::string(dtype_name(t)) + " is not supported on " + rt.backend->info().name + " (" + tensors +
                          "): f16 and bf16 need a Vulkan device with 16-bit storage");
  };
  for (const TensorIr& in : op.inputs) check(in.dtype);
  for (const TensorIr& o : outs) check(o.dtype);
}

// The one path from an op call to its message. Writes the output handles into `outs`.
void submit_core(OpKind kind, Tensor* inputs, std::size_t n, OpAttrs&& attrs, Device device, Tensor* outs,
                 std::size_t out_capacity) {
  const char* name = op_name(kind);
  OpIr op;
  op.kind = kind;
  op.attrs = std::move(attrs);
  op.inputs.reserve(n);
  bool tracked = false;  // some input takes part in a backward graph
  for (std::size_t i = 0; i < n; ++i) {
    KILN_CHECK(inputs[i].defined(), name, "input #" + std::to_string(i) + " is an undefined tensor");
    const TensorState& s = *inputs[i].state();
    if (i == 0) {
      device = s.device;
    } else {
      KILN_CHECK(s.device == device, name,
                 "inputs are on different devices: input #0 is on " + device.str() + ", input #" + std::to_string(i) +
                     " (" + dtype_name(s.dtype) + s.shape.str() + ") is on " + s.device.str());
    }
    op.inputs.push_back(TensorIr{s.id, s.shape, s.dtype, TensorStatus::ReadOnly});
    tracked |= s.autograd != nullptr;
  }
  DeviceRuntime& rt = Engine::get().runtime(device, name);
  TensorList& metas = op.outputs;  // the rule fills the message's outputs; ids come below
  infer_outputs(op, metas);
  check_device_dtypes(name, op, metas, rt);
  KILN_CHECK(metas.size() <= out_capacity, name, "internal error: too many outputs");
  PassRecorder* const rec = recording_pass();
  // Flow control: past the stream's bound this waits for the device (or throws), before any
  // of the op has happened. A pass being recorded runs nothing.
  if (!rec) [[likely]] {
    std::uint64_t bytes = 0;
    for (const TensorIr& m : metas) bytes += m.bytes();
    rt.stream.admit(bytes, name);
  }

  // Autograd records the op (and copies the handles it saves) before ownership is decided.
  // Inference never gets past this branch: no input carries autograd meta.
  std::shared_ptr<GradNode> node;
  const AutogradHooks* hooks = nullptr;
  if (tracked) [[unlikely]] {
    hooks = g_autograd_hooks.load(std::memory_order_acquire);
    node = hooks->begin(op, metas, inputs);
  }
  if (rec) [[unlikely]] {
    rec->check_device(device, name);
    KILN_CHECK(!node || rec->gradients, name, "a recorded pass takes no gradients: record it under NoGradGuard");
  }

  // Ownership: an input whose handle is the last one (the caller moved it in) is handed over.
  // The acquire fence pairs with the release in the other handles' destruction, so everything
  // those threads submitted is sequenced before this message.
  for (std::size_t i = 0; i < n; ++i) {
    const std::shared_ptr<TensorState>& s = inputs[i].state();
    if (rec && !rec->made_inside(s->id)) [[unlikely]] {
      // From outside the pass (a weight): every replay reads it again. Its stand-in inputs count
      // as made inside: the last handle of one hands it over, as any value's.
      rec->keep_outside(s);
      continue;
    }
    if (s.use_count() == 1 && (!s->owner || s->owner.use_count() == 1)) op.inputs[i].status = TensorStatus::ReadWrite;
  }
  std::atomic_thread_fence(std::memory_order_acquire);

  Engine& engine = Engine::get();
  for (std::size_t o = 0; o < metas.size(); ++o) {
    TensorIr& m = metas[o];
    m.id = engine.new_id();
    m.status = TensorStatus::NotInit;
    outs[o] = Tensor(std::make_shared<TensorState>(m.id, m.shape, m.dtype, device));
    if (rec) [[unlikely]]
      rec->made_here(outs[o].state());
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (op.inputs[i].status != TensorStatus::ReadWrite) continue;
    TensorState& s = *inputs[i].state();
    s.consumed = true;
    if (s.owner) s.owner->consumed = true;
  }
  const std::size_t n_outputs = metas.size();
  if (rec) [[unlikely]] {
    if (kind == OpKind::rand_uniform || kind == OpKind::rand_normal || kind == OpKind::rand_bernoulli)
      rec->random_op(op);
    rec->add(std::move(op));
  } else {
    rt.stream.submit(std::move(op), Flush::later);
  }
  if (node) [[unlikely]]
    hooks->finish(node, outs, n_outputs);
}

}  // namespace

void install_autograd_hooks(const AutogradHooks* hooks) {
  const AutogradHooks* expected = nullptr;
  if (!g_autograd_hooks.compare_exchange_strong(expected, hooks, std::memory_order_acq_rel))
    KILN_CHECK(expected == hooks, "autograd", "internal error: a second, different set of autograd hooks");
}

std::vector<Tensor> submit(OpKind kind, Tensor* inputs, std::size_t n_inputs, OpAttrs attrs, Device device) {
  Tensor outs[4];
  submit_core(kind, inputs, n_inputs, std::move(attrs), device, outs, 4);
  std::vector<Tensor> result;
  for (auto& t : outs)
    if (t.defined()) result.push_back(std::move(t));
  return result;
}

Tensor submit0(OpKind kind, OpAttrs attrs, Device device) {
  Tensor out;
  submit_core(kind, nullptr, 0, std::move(attrs), device, &out, 1);
  return out;
}

Tensor submit1(OpKind kind, Tensor a, OpAttrs attrs) {
  Tensor out;
  submit_core(kind, &a, 1, std::move(attrs), Device::cpu(), &out, 1);
  return out;
}

Tensor submit2(OpKind kind, Tensor a, Tensor b, OpAttrs attrs) {
  Tensor in[2] = {std::move(a), std::move(b)};
  Tensor out;
  submit_core(kind, in, 2, std::move(attrs), Device::cpu(), &out, 1);
  return out;
}

Tensor submit3(OpKind kind, Tensor a, Tensor b, Tensor c, OpAttrs attrs) {
  Tensor in[3] = {std::move(a), std::move(b), std::move(c)};
  Tensor out;
  submit_core(kind, in, 3, std::move(attrs), Device::cpu(), &out, 1);
  return out;
}

Tensor submit_upload(std::shared_ptr<const std::byte> bytes, const Shape& shape, DType dtype,
                     Device device) {
  DeviceRuntime& rt = Engine::get().runtime(device, "upload");
  PassRecorder* const rec = recording_pass();
  if (!rec) [[likely]]
    rt.stream.admit(static_cast<std::uint64_t>(shape.numel()) * dtype_size(dtype), "upload");
  OpIr op;
  op.kind = OpKind::upload;
  op.host_data = std::move(bytes);
  TensorIr meta{Engine::get().new_id(), shape, dtype, TensorStatus::NotInit};
  Tensor out(std::make_shared<TensorState>(meta.id, shape, dtype, device));
  op.outputs.push_back(meta);
  if (rec) [[unlikely]] {
    // A constant the pass makes: every replay uploads it again from the same bytes.
    rec->check_device(device, "upload");
    rec->made_here(out.state());
    rec->add(std::move(op));
    return out;
  }
  rt.stream.submit(std::move(op), Flush::later);
  return out;
}

FutureHelper submit_read(const Tensor& t, const char* op_label, DType expected, std::shared_ptr<Completion> completion) {
  KILN_CHECK(t.defined(), op_label, "the tensor is undefined");
  KILN_CHECK(recording_pass() == nullptr, op_label,
             "a recorded pass cannot read values: it runs nothing while recorded");
  const TensorState& s = *t.state();
  KILN_CHECK(s.dtype == expected, op_label,
             std::string("the tensor is ") + dtype_name(s.dtype) + s.shape.str() + " but its values were asked as " +
                 dtype_name(expected));
  OpIr op;
  op.kind = OpKind::read;
  op.inputs.push_back(TensorIr{s.id, s.shape, s.dtype, TensorStatus::ReadOnly});
  op.completion = std::move(completion);
  DeviceRuntime& rt = Engine::get().runtime(s.device, op_label);
  rt.stream.submit(std::move(op), Flush::reader);
  return rt.helper();
}

}  // namespace kiln::detail
