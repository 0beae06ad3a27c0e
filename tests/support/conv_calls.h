// Runs the kiln op that a case of conv.json or grad_conv_models.json names (tests/data/gen_conv.py
// and gen_grad_conv_models.py), with the case's attrs: the options by their C++ names. Shared by
// the forward suites (tests/ops) and the gradient suite (tests/autograd).
#pragma once
#include <string>
#include <vector>

#include "support/reference.h"

namespace kiln::test {

inline Window window_attr(const Json& a, const char* key, Window fallback) {
  return a.contains(key) ? a[key].get<Window>() : fallback;
}

inline PoolOptions pool_options(const Json& a) {
  PoolOptions o;
  o.kernel = a.at("kernel").get<Window>();
  o.stride = window_attr(a, "stride", {});
  o.padding = window_attr(a, "padding", {0});
  o.dilation = window_attr(a, "dilation", {1});
  o.ceil_mode = a.value("ceil_mode", false);
  o.count_include_pad = a.value("count_include_pad", true);
  return o;
}

// The op's outputs: its values, then for max pooling the indices.
inline std::vector<Tensor> call_conv_op(const std::string& op, const Json& a, const std::vector<Tensor>& in) {
  const Tensor& x = in.at(0);
  const Tensor bias = in.size() > 2 ? in[2] : Tensor{};
  if (op.rfind("conv_transpose", 0) == 0) {
    ConvTransposeOptions o;
    o.stride = window_attr(a, "stride", {1});
    o.padding = window_attr(a, "padding", {0});
    o.output_padding = window_attr(a, "output_padding", {0});
    o.dilation = window_attr(a, "dilation", {1});
    o.groups = a.value("groups", 1);
    if (op == "conv_transpose1d") return {conv_transpose1d(x, in.at(1), bias, o)};
    if (op == "conv_transpose2d") return {conv_transpose2d(x, in.at(1), bias, o)};
    if (op == "conv_transpose3d") return {conv_transpose3d(x, in.at(1), bias, o)};
  }
  if (op.rfind("conv", 0) == 0) {
    ConvOptions o;
    o.stride = window_attr(a, "stride", {1});
    o.padding = window_attr(a, "padding", {0});
    o.dilation = window_attr(a, "dilation", {1});
    o.groups = a.value("groups", 1);
    o.same_padding = a.value("same_padding", false);
    if (op == "conv1d") return {conv1d(x, in.at(1), bias, o)};
    if (op == "conv2d") return {conv2d(x, in.at(1), bias, o)};
    if (op == "conv3d") return {conv3d(x, in.at(1), bias, o)};
  }
  const auto pair = [](PoolResult r) { return std::vector<Tensor>{r.values, r.indices}; };
  if (op == "max_pool1d") return pair(max_pool1d_with_indices(x, pool_options(a)));
  if (op == "max_pool2d") return pair(max_pool2d_with_indices(x, pool_options(a)));
  if (op == "avg_pool1d") return {avg_pool1d(x, pool_options(a))};
  if (op == "avg_pool2d") return {avg_pool2d(x, pool_options(a))};
  if (op == "adaptive_avg_pool1d") return {adaptive_avg_pool1d(x, a.at("output_size").get<Window>())};
  if (op == "adaptive_avg_pool2d") return {adaptive_avg_pool2d(x, a.at("output_size").get<Window>())};
  if (op == "adaptive_max_pool1d") return pair(adaptive_max_pool1d_with_indices(x, a.at("output_size").get<Window>()));
  if (op == "adaptive_max_pool2d") return pair(adaptive_max_pool2d_with_indices(x, a.at("output_size").get<Window>()));
  if (op == "interpolate2d") {
    const InterpolateMode mode =
        a.at("mode").get<std::string>() == "bilinear" ? InterpolateMode::bilinear : InterpolateMode::nearest;
    const bool align = a.value("align_corners", false);
    if (a.contains("size")) return {interpolate2d(x, a.at("size").get<Window>(), mode, align)};
    return {interpolate2d(x, a.at("scale_factor").get<std::vector<double>>(), mode, align)};
  }
  ADD_FAILURE() << "no kiln call for op " << op;
  return {};
}

}  // namespace kiln::test
