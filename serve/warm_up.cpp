#include "kiln/serve/warm_up.h"

#include "kiln/autograd/autograd.h"
#include "kiln/engine/creation.h"
#include "kiln/base/log.h"

namespace kiln::serve {

void warm_up(const std::function<Tensor(const Tensor&)>& forward, const Shape& item_shape,
             const std::vector<std::size_t>& batch_sizes, Device device) {
  KILN_CHECK(static_cast<bool>(forward), "serve::warm_up", "the forward function is empty");
  const NoGradGuard no_grad;  // as requests run (serve::Batcher): no graph recorded
  for (std::size_t b : batch_sizes) {
    KILN_CHECK(b >= 1, "serve::warm_up", "batch sizes must be at least 1");
    Shape shape = item_shape;
    shape.insert(0, static_cast<std::int64_t>(b));
    // Twice: the first run compiles; the second finds its buffers in the pool and its plans in
    // the cache, which is the state a request will see. The input is uploaded from the host, as
    // a request's is (a constant made on the device could fuse into the model's first kernels
    // and plan differently).
    for (int pass = 0; pass < 2; ++pass) {
      Tensor input = from_vector(std::vector<float>(static_cast<std::size_t>(shape.numel()), 0.0f), shape, device);
      Tensor out = forward(input);
      KILN_CHECK(out.defined(), "serve::warm_up", "the forward function returned an undefined tensor");
      out.to_vector<float>().get();
    }
    if (log_enabled(spdlog::level::debug)) logger().debug("warm-up: batch {} of {} ready", b, item_shape.str());
  }
}

}  // namespace kiln::serve
