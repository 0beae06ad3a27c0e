#include "kiln/engine/creation.h"

#include <cmath>

#include "kiln/engine/submit.h"

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

OpAttrs shape_attrs(const Shape& shape, DType dtype) {
  OpAttrs a;
  a.ints.assign(shape.begin(), shape.end());
  a.dtype = dtype;
  return a;
}

Tensor random(OpKind kind, const Shape& shape, double s1, double s2, Generator& gen, TensorOptions o) {
  OpAttrs a = shape_attrs(shape, o.dtype);
  a.scalar = s1;
  a.scalar2 = s2;
  a.seed = gen.next_draw();
  return detail::submit0(kind, std::move(a), o.device);
}

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
  OpAttrs a = shape_attrs(shape, o.dtype);
  a.scalar = value;
  return detail::submit0(OpKind::full, std::move(a), o.device);
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
  OpAttrs a = shape_attrs(Shape{std::max<std::int64_t>(n, 0)}, o.dtype);
  a.scalar = start;
  a.scalar2 = step;
  return detail::submit0(OpKind::arange, std::move(a), o.device);
}
Tensor arange(double end, TensorOptions o) { return arange(0.0, end, 1.0, o); }

Tensor linspace(double start, double end, std::int64_t steps, TensorOptions o) {
  KILN_CHECK(steps >= 0, "linspace", "steps must be non-negative, got " + std::to_string(steps));
  OpAttrs a = shape_attrs(Shape{steps}, o.dtype);
  a.scalar = start;
  a.scalar2 = end;
  return detail::submit0(OpKind::linspace, std::move(a), o.device);
}

Tensor eye(std::int64_t n, std::int64_t m, TensorOptions o) {
  KILN_CHECK(n >= 0, "eye", "n must be non-negative, got " + std::to_string(n));
  return detail::submit0(OpKind::eye, shape_attrs(Shape{n, m < 0 ? n : m}, o.dtype), o.device);
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}
void manual_seed(std::uint64_t seed) { default_generator() = Generator(seed); }

Tensor uniform(const Shape& shape, double low, double high, Generator& gen, TensorOptions o) {
  KILN_CHECK(low <= high, "uniform", "low (" + std::to_string(low) + ") is above high (" + std::to_string(high) + ")");
  return random(OpKind::rand_uniform, shape, low, high, gen, o);
}
Tensor rand(const Shape& shape, Generator& gen, TensorOptions o) { return uniform(shape, 0.0, 1.0, gen, o); }
Tensor normal(const Shape& shape, double mean, double std, Generator& gen, TensorOptions o) {
  KILN_CHECK(std >= 0.0, "normal", "std must be non-negative, got " + std::to_string(std));
  return random(OpKind::rand_normal, shape, mean, std, gen, o);
}
Tensor randn(const Shape& shape, Generator& gen, TensorOptions o) { return normal(shape, 0.0, 1.0, gen, o); }
Tensor bernoulli(const Shape& shape, double p, Generator& gen, TensorOptions o) {
  KILN_CHECK(p >= 0.0 && p <= 1.0, "bernoulli", "p must be in [0, 1], got " + std::to_string(p));
  return random(OpKind::rand_bernoulli, shape, p, 0.0, gen, o);
}

}  // namespace kiln
