// kiln::to. Between devices of one memory (the streams of a GPU) the source hands over the
// value's buffer once it is written and the destination copies it on the device; otherwise the
// bytes travel through the host. Either way the destination's upload waits (on its scheduler
// thread) for what the source's read delivers. That wait cannot deadlock, not even for two
// opposite transfers: the read is submitted before the upload, so every upload waits only for a
// read that its own submitting thread queued earlier, and a stream runs its messages in
// submission order — a chain of waits always ends at a read that needs nothing but its own
// stream. (Each blocked
// upload holds one of the scheduler's workers; the arena has at least one per stream, so the
// stream of that read always finds a worker.)
#include "kiln/engine/transfer.h"

#include <future>

#include "kiln/engine/runtime.h"
#include "kiln/engine/submit.h"

namespace kiln {

namespace {

// Receives the source's bytes (on the source's scheduler thread) and hands them to the upload.
class Transfer final : public Completion, public PendingHostData {
 public:
  Transfer() : future_(promise_.get_future().share()) {}
  void complete(const std::byte* data, std::size_t bytes) override {
    promise_.set_value(std::make_shared<const std::vector<std::byte>>(data, data + bytes));
  }
  void fail(std::exception_ptr e) override { promise_.set_exception(e); }
  std::shared_ptr<const std::vector<std::byte>> wait() const override { return future_.get(); }

 private:
  std::promise<std::shared_ptr<const std::vector<std::byte>>> promise_;
  std::shared_future<std::shared_ptr<const std::vector<std::byte>>> future_;
};

// Between devices of one memory (streams of a GPU): the source's buffer itself, once written.
class BufferTransfer final : public Completion, public PendingBuffer {
 public:
  BufferTransfer() : future_(promise_.get_future().share()) {}
  bool takes_buffer() const override { return true; }
  void complete_buffer(std::shared_ptr<void> buffer) override { promise_.set_value(std::move(buffer)); }
  void complete(const std::byte*, std::size_t) override {
    promise_.set_exception(std::make_exception_ptr(Error("to", "the source sent bytes, not its buffer (internal error)")));
  }
  void fail(std::exception_ptr e) override { promise_.set_exception(e); }
  std::shared_ptr<void> wait() const override { return future_.get(); }

 private:
  std::promise<std::shared_ptr<void>> promise_;
  std::shared_future<std::shared_ptr<void>> future_;
};

}  // namespace

Tensor to(Tensor x, Device device) {
  KILN_CHECK(x.defined(), "to", "the tensor is undefined");
  if (x.device() == device) return x;
  DeviceRuntime& dst = Engine::get().runtime(device, "to");
  KILN_CHECK(dst.backend->supports(x.dtype()), "to",
             std::string(dtype_name(x.dtype())) + " is not supported on " + dst.backend->info().name + " (tensor " +
                 dtype_name(x.dtype()) + x.shape().str() + "): f16 and bf16 need a Vulkan device with 16-bit storage");
  DeviceRuntime& src = Engine::get().runtime(x.device(), "to");
  dst.stream.admit(static_cast<std::uint64_t>(x.numel()) * dtype_size(x.dtype()), "to");  // flow control, receiving side
  const void* domain = src.backend->memory_domain();
  OpIr op;
  op.kind = OpKind::upload;
  if (domain && domain == dst.backend->memory_domain()) {
    auto transfer = std::make_shared<BufferTransfer>();
    detail::submit_read(x, "to", x.dtype(), transfer);
    op.pending_buffer = transfer;
  } else {
    auto transfer = std::make_shared<Transfer>();
    detail::submit_read(x, "to", x.dtype(), transfer);
    op.pending_data = transfer;
  }
  TensorIr meta{Engine::get().new_id(), x.shape(), x.dtype(), TensorStatus::NotInit};
  Tensor out(std::make_shared<detail::TensorState>(meta.id, meta.shape, meta.dtype, device));
  op.outputs.push_back(meta);
  dst.stream.submit(std::move(op), Flush::later);
  return out;
}

}  // namespace kiln
