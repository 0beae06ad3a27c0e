#include "kiln/engine/creation.h"

#include <cmath>

#include "kiln/engine/submit.h"
#include "kiln/ops/attrs_creation.h"

namespace kiln {

namespace {

// The message keeps `data` itself (moved in, no copy) until the upload has run.
template <class T> Tensor upload_vector(const char* op, std::vector<T>&& data, const Shape& shape, Device device) {
  KILN_CHECK(static_cast<std::int64_t>(data.size()) == shape.numel(), op,
             std::to_string(data.size()) + " values do not fill shape " + shape.str() + " (" +
                 std::to_string(shape.numel()) + " elements)");
  for (auto d : shape) KILN_CHECK(d >= 0, op, "negative dimension in shape " + shape.str());
  auto owner = std::make_shared<const std::vector<T>>(std::move(data));
  std::shared_ptr<const std::byte> bytes(owner, reinterpret_cast<const std::byte*>(owner->data()));
  return detail::submit_upload(std::move(bytes), shape, dtype_of<T>, device);
}

CreationOutput creation_output(const Shape& shape, TensorOptions o) { return CreationOutput{shape, o.dtype}; }

}  // namespace

Tensor from_vector(std::vector<float> data, const Shape& shape, Device device) {
  return upload_vector("from_vector", std::move(data), shape, device);
}
Tensor from_vector(std::vector<std::int64_t> data, const Shape& shape, Device device) {
  return upload_vector("from_vector", std::move(data), shape, device);
}
Tensor from_vector(const std::vector<bool>& data, const Shape& shape, Device device) {
  auto bytes = std::make_shared<const std::vector<std::uint8_t>>(data.begin(), data.end());
  KILN_CHECK(static_cast<std::int64_t>(bytes->size()) == shape.numel(), "from_vector",
             std::to_string(bytes->size()) + " values do not fill shape " + shape.str());
  std::shared_ptr<const std::byte> view(bytes, reinterpret_cast<const std::byte*>(bytes->data()));
  return detail::submit_upload(std::move(view), shape, DType::bool_, device);
}

Tensor full(const Shape& shape, double value, TensorOptions o) {
  return detail::submit0(OpKind::full, FullAttrs{creation_output(shape, o), value}.encode(), o.device);
}
Tensor scalar(double value, TensorOptions o) { return full(Shape{}, value, o); }
Tensor zeros(const Shape& shape, TensorOptions o) { return full(shape, 0.0, o); }
Tensor ones(const Shape& shape, TensorOptions o) { return full(shape, 1.0, o); }
Tensor full_like(const Tensor& like, double value) { return full(like.shape(), value, {like.dtype(), like.device()}); }
Tensor zeros_like(const Tensor& like) { return full_like(like, 0.0); }
Tensor ones_like(const Tensor& like) { return full_like(like, 1.0); }

Tensor arange(double start, double end, double step, TensorOptions o) {
  KILN_CHECK(step != 0.0, "arange", "step must be nonzero");
  KILN_CHECK(std::isfinite(start) && std::isfinite(end), "arange", "start and end must be finite");
  KILN_CHECK((end - start) / step >= 0 || start == end, "arange",
             "the range [" + std::to_string(start) + ", " + std::to_string(end) + ") is not reachable with step " +
                 std::to_string(step));
  const auto n = static_cast<std::int64_t>(std::ceil((end - start) / step));
  const ArangeAttrs a{creation_output(Shape{std::max<std::int64_t>(n, 0)}, o), start, step};
  return detail::submit0(OpKind::arange, a.encode(), o.device);
}
Tensor arange(double end, TensorOptions o) { return arange(0.0, end, 1.0, o); }

Tensor linspace(double start, double end, std::int64_t steps, TensorOptions o) {
  KILN_CHECK(steps >= 0, "linspace", "steps must be non-negative, got " + std::to_string(steps));
  return detail::submit0(OpKind::linspace, LinspaceAttrs{creation_output(Shape{steps}, o), start, end}.encode(), o.device);
}

Tensor eye(std::int64_t n, std::int64_t m, TensorOptions o) {
  KILN_CHECK(n >= 0, "eye", "n must be non-negative, got " + std::to_string(n));
  return detail::submit0(OpKind::eye, creation_output(Shape{n, m < 0 ? n : m}, o).encode(), o.device);
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}
void manual_seed(std::uint64_t seed) { default_generator() = Generator(seed); }

Tensor uniform(const Shape& shape, double low, double high, Generator& gen, TensorOptions o) {
  KILN_CHECK(low <= high, "uniform", "low (" + std::to_string(low) + ") is above high (" + std::to_string(high) + ")");
  return detail::submit0(OpKind::rand_uniform, UniformAttrs{creation_output(shape, o), low, high, gen.next_draw()}.encode(),
                         o.device);
}
Tensor rand(const Shape& shape, Generator& gen, TensorOptions o) { return uniform(shape, 0.0, 1.0, gen, o); }
Tensor normal(const Shape& shape, double mean, double std, Generator& gen, TensorOptions o) {
  KILN_CHECK(std >= 0.0, "normal", "std must be non-negative, got " + std::to_string(std));
  return detail::submit0(OpKind::rand_normal, NormalAttrs{creation_output(shape, o), mean, std, gen.next_draw()}.encode(),
                         o.device);
}
Tensor randn(const Shape& shape, Generator& gen, TensorOptions o) { return normal(shape, 0.0, 1.0, gen, o); }
Tensor bernoulli(const Shape& shape, double p, Generator& gen, TensorOptions o) {
  KILN_CHECK(p >= 0.0 && p <= 1.0, "bernoulli", "p must be in [0, 1], got " + std::to_string(p));
  return detail::submit0(OpKind::rand_bernoulli, BernoulliAttrs{creation_output(shape, o), p, gen.next_draw()}.encode(),
                         o.device);
}

}  // namespace kiln
