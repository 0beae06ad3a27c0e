// kiln::to. The destination's upload waits (on its scheduler thread) for the bytes that the
// source's read delivers. That wait cannot deadlock, not even for two opposite transfers: the
// read is submitted before the upload, so every upload waits only for a read that its own
// submitting thread queued earlier, and a stream runs its messages in submission order — a
// chain of waits always ends at a read that needs nothing but its own stream. (Each blocked
// upload holds one of the scheduler's workers; the arena has at least one per stream, so the
// stream of that read always finds a worker.)
#include "engine/transfer.h"

#include <future>

#include "engine/runtime.h"
#include "engine/submit.h"

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

}  // namespace

Tensor to(Tensor x, Device device) {
  KILN_CHECK(x.defined(), "to", "the tensor is undefined");
  if (x.device() == device) return x;
  DeviceRuntime& dst = Engine::get().runtime(device, "to");
  KILN_CHECK(dst.backend->supports(x.dtype()), "to",
             std::string(dtype_name(x.dtype())) + " is not supported on " + dst.backend->info().name + " (tensor " +
                 dtype_name(x.dtype()) + x.shape().str() + "): f16 and bf16 need a Vulkan device with 16-bit storage");
  auto transfer = std::make_shared<Transfer>();
  detail::submit_read(x, "to", x.dtype(), transfer);

  OpIr op;
  op.kind = OpKind::upload;
  op.pending_data = transfer;
  TensorIr meta{Engine::get().new_id(), x.shape(), x.dtype(), TensorStatus::NotInit};
  Tensor out(std::make_shared<detail::TensorState>(meta.id, meta.shape, meta.dtype, device));
  op.outputs.push_back(meta);
  dst.stream.submit(std::move(op), /*urgent=*/false);
  return out;
}

}  // namespace kiln
