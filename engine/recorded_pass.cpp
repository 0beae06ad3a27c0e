#include "kiln/engine/recorded_pass.h"

#include "kiln/engine/creation.h"
#include "kiln/engine/submit.h"

namespace kiln {

RecordedPass RecordedPass::record(const std::function<Tensor(const Tensor&)>& forward, const Shape& shape, DType dtype,
                                  Device device) {
  const char* where = "RecordedPass::record";
  KILN_CHECK(static_cast<bool>(forward), where, "no function to record");
  // Once for real: caches the function fills on its first call are filled outside the
  // recording, and its kernels are compiled.
  forward(zeros(shape, TensorOptions{dtype, device}));
  RecordingOptions options;
  options.name = "recorded pass";
  options.record_name = where;
  options.gradients = false;
  return RecordedPass(RecordedFunction::record(
      [&](std::vector<Tensor>& in, RecordedFunction::Recording&) {
        Tensor y = forward(in[0]);
        KILN_CHECK(y.defined(), where, "the function returned an undefined tensor");
        KILN_CHECK(y.id() != in[0].id(), where, "the function returned its input, a tensor it did not make: nothing to record");
        return std::vector<Tensor>{std::move(y)};
      },
      {{shape, dtype}}, device, std::move(options)));
}

Tensor RecordedPass::operator()(const Tensor& x) const {
  KILN_CHECK(!x.defined() || x.state()->autograd == nullptr, function_.name(),
             "the input takes part in a backward graph: a recorded pass takes no gradients");
  return function_({x})[0];
}

}  // namespace kiln
