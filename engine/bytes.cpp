// The read is the message Tensor::to_vector sends (submit_read), with a completion that keeps
// the bytes as they are; the upload is the message from_vector sends.
#include "kiln/engine/bytes.h"

#include "kiln/engine/runtime.h"
#include "kiln/engine/submit.h"

namespace kiln {

namespace {

class BytesCompletion final : public Completion {
 public:
  Promise<std::vector<std::byte>> promise;
  void complete(const std::byte* data, std::size_t bytes) override {
    promise.set_value(std::vector<std::byte>(data, data + bytes));
  }
  void fail(std::exception_ptr e) override { promise.set_exception(e); }
};

}  // namespace

Future<std::vector<std::byte>> to_bytes(const Tensor& t) {
  KILN_CHECK(t.defined(), "to_bytes", "the tensor is undefined");
  auto completion = std::make_shared<BytesCompletion>();
  auto state = completion->promise.state();
  const FutureHelper helper = detail::submit_read(t, "to_bytes", t.dtype(), completion);
  return Future<std::vector<std::byte>>(std::move(state), helper);
}

bool device_supports(Device device, DType dtype) {
  if (dtype == DType::f32 || dtype == DType::i64 || dtype == DType::bool_) return true;
  return Engine::get().runtime(device, "device_supports").backend->supports(dtype);
}

Tensor from_bytes(std::shared_ptr<const std::vector<std::byte>> bytes, const Shape& shape, DType dtype, Device device) {
  KILN_CHECK(bytes != nullptr, "from_bytes", "no bytes");
  const std::size_t expected = static_cast<std::size_t>(shape.numel()) * dtype_size(dtype);
  KILN_CHECK(bytes->size() == expected, "from_bytes",
             std::to_string(bytes->size()) + " bytes for a " + dtype_name(dtype) + shape.str() + " tensor, which takes " +
                 std::to_string(expected));
  KILN_CHECK(device_supports(device, dtype), "from_bytes",
             std::string(dtype_name(dtype)) + " is not supported on " + device.str() +
                 " (f16 and bf16 need a Vulkan device with 16-bit storage)");
  return detail::submit_upload(std::move(bytes), shape, dtype, device);
}

}  // namespace kiln
