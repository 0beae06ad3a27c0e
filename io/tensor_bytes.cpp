// The read goes through the same message as Tensor::to_vector (submit_read), with a completion
// that keeps the bytes as they are; the upload is the message from_vector sends.
#include "io/tensor_bytes.h"

#include "engine/runtime.h"
#include "engine/submit.h"

namespace kiln::io::detail {

namespace {

class BytesCompletion final : public Completion {
 public:
  Promise<std::vector<std::byte>> promise;
  void complete(const std::byte* data, std::size_t bytes) override { promise.set_value(std::vector<std::byte>(data, data + bytes)); }
  void fail(std::exception_ptr e) override { promise.set_exception(e); }
};

}  // namespace

std::vector<std::byte> read_tensor_bytes(const Tensor& t, const char* op) {
  auto completion = std::make_shared<BytesCompletion>();
  auto state = completion->promise.state();
  const FutureHelper helper = kiln::detail::submit_read(t, op, t.dtype(), completion);
  return Future<std::vector<std::byte>>(std::move(state), helper).get();
}

void check_device_holds(Device device, DType dtype, const char* op, const std::string& what) {
  if (dtype == DType::f32 || dtype == DType::i64 || dtype == DType::bool_) return;
  DeviceRuntime& rt = Engine::get().runtime(device, op);
  KILN_CHECK(rt.backend->supports(dtype), op,
             what + ": " + dtype_name(dtype) + " is not supported on " + device.str() +
                 " (f16 and bf16 need a Vulkan device with 16-bit storage); ask for a conversion to f32");
}

Tensor tensor_from_bytes(std::shared_ptr<const std::vector<std::byte>> bytes, const Shape& shape, DType dtype,
                         Device device) {
  return kiln::detail::submit_upload(std::move(bytes), shape, dtype, device);
}

}  // namespace kiln::io::detail
