#include "kiln/nn/conv.h"

#include <cmath>

namespace kiln::nn {

namespace detail {

ConvInit conv_init(const char* layer, std::int64_t in, std::int64_t out, const Window& kernel, int spatial,
                   std::int64_t groups, bool with_bias, bool transposed, Device device) {
  KILN_CHECK(in > 0 && out > 0, layer,
             "channels must be positive, got in=" + std::to_string(in) + ", out=" + std::to_string(out));
  KILN_CHECK(groups > 0 && in % groups == 0 && out % groups == 0, layer,
             "groups (" + std::to_string(groups) + ") must divide in_channels (" + std::to_string(in) +
                 ") and out_channels (" + std::to_string(out) + ")");
  KILN_CHECK(kernel.size() == 1 || kernel.size() == static_cast<std::size_t>(spatial), layer,
             "kernel_size needs 1 or " + std::to_string(spatial) + " values, got " + std::to_string(kernel.size()));
  Shape shape = transposed ? Shape{in, out / groups} : Shape{out, in / groups};
  for (int d = 0; d < spatial; ++d) {
    const std::int64_t k = kernel.size() == 1 ? kernel[0] : kernel[static_cast<std::size_t>(d)];
    KILN_CHECK(k > 0, layer, "kernel sizes must be positive, got " + std::to_string(k));
    shape.push_back(k);
  }
  // torch's reset_parameters: kaiming_uniform(a = sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
  // fan_in = weight.size(1) * receptive field; the bias takes the same bound.
  std::int64_t fan_in = shape[1];
  for (int d = 2; d < shape.rank(); ++d) fan_in *= shape[d];
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  const TensorOptions on{DType::f32, device};
  ConvInit init;
  init.weight = uniform(shape, -bound, bound, default_generator(), on);
  if (with_bias) init.bias = uniform(Shape{out}, -bound, bound, default_generator(), on);
  return init;
}

std::string conv_describe(const Tensor& weight, bool transposed, const Window& stride, const Window& padding,
                          std::int64_t groups, bool same) {
  const Shape& w = weight.shape();
  const std::int64_t in = transposed ? w[0] : w[1] * groups, out = transposed ? w[1] * groups : w[0];
  Window kernel;
  for (int d = 2; d < w.rank(); ++d) kernel.push_back(w[d]);
  std::string s = std::to_string(in) + ", " + std::to_string(out) + ", kernel_size=" + Shape(kernel).str() +
                  ", stride=" + Shape(stride).str() + ", padding=" + (same ? std::string("same") : Shape(padding).str());
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  return s;
}

}  // namespace detail

namespace {

template <int D> Tensor convolve(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvOptions& o) {
  if constexpr (D == 1) return conv1d(x, weight, bias, o);
  else if constexpr (D == 2) return conv2d(x, weight, bias, o);
  else return conv3d(x, weight, bias, o);
}

template <int D>
Tensor convolve_transposed(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvTransposeOptions& o) {
  if constexpr (D == 1) return conv_transpose1d(x, weight, bias, o);
  else if constexpr (D == 2) return conv_transpose2d(x, weight, bias, o);
  else return conv_transpose3d(x, weight, bias, o);
}

}  // namespace

template <int D>
ConvNd<D>::ConvNd(std::int64_t in, std::int64_t out, Window kernel, const ConvLayerOptions& o) {
  detail::ConvInit init = detail::conv_init(type_name(), in, out, kernel, D, o.groups, o.bias, false, o.device);
  weight = Parameter(init.weight);
  if (o.bias) bias = Parameter(init.bias);
  options_ = ConvOptions{o.stride, o.padding, o.dilation, o.groups, o.same_padding};
}

template <int D> Tensor ConvNd<D>::forward(const Tensor& x) const {
  return guarded([&] { return convolve<D>(x, weight, bias, options_); });
}

template <int D> std::string ConvNd<D>::describe() const {
  return detail::conv_describe(weight, false, options_.stride, options_.padding, options_.groups,
                               options_.same_padding);
}

template <int D>
ConvTransposeNd<D>::ConvTransposeNd(std::int64_t in, std::int64_t out, Window kernel,
                                    const ConvTransposeLayerOptions& o) {
  detail::ConvInit init = detail::conv_init(type_name(), in, out, kernel, D, o.groups, o.bias, true, o.device);
  weight = Parameter(init.weight);
  if (o.bias) bias = Parameter(init.bias);
  options_ = ConvTransposeOptions{o.stride, o.padding, o.output_padding, o.dilation, o.groups};
}

template <int D> Tensor ConvTransposeNd<D>::forward(const Tensor& x) const {
  return guarded([&] { return convolve_transposed<D>(x, weight, bias, options_); });
}

template <int D> std::string ConvTransposeNd<D>::describe() const {
  return detail::conv_describe(weight, true, options_.stride, options_.padding, options_.groups, false);
}

template class ConvNd<1>;
template class ConvNd<2>;
template class ConvNd<3>;
template class ConvTransposeNd<1>;
template class ConvTransposeNd<2>;
template class ConvTransposeNd<3>;

}  // namespace kiln::nn
