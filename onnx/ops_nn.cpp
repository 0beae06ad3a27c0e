// Network ONNX ops: MatMul, Gemm, Conv, ConvTranspose, pooling, the normalizations, Dropout,
// Softmax. ONNX's explicit (possibly asymmetric) pads and auto_pad become kiln's symmetric
// padding plus an explicit pad where needed.
#include <cmath>
#include <limits>

#include "kiln/nn/functional.h"
#include "kiln/onnx/op_registry.h"

namespace kiln::onnx::detail {
namespace {

// Begin and end pads per spatial dim, from `pads` or auto_pad.
struct SpatialPads {
  std::vector<std::int64_t> begin, end;
  bool symmetric() const { return begin == end; }
};

SpatialPads spatial_pads(const OpContext& ctx, const std::vector<std::int64_t>& in,
                         const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& stride,
                         const std::vector<std::int64_t>& dilation) {
  const std::size_t n = kernel.size();
  SpatialPads p{std::vector<std::int64_t>(n, 0), std::vector<std::int64_t>(n, 0)};
  const std::string auto_pad = ctx.node.s("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    const auto pads = ctx.node.ints("pads");
    if (!pads.empty()) {
      ctx.check(pads.size() == 2 * n,
                "pads has " + std::to_string(pads.size()) + " values for " + std::to_string(n) + " spatial dims");
      for (std::size_t d = 0; d < n; ++d) {
        p.begin[d] = pads[d];
        p.end[d] = pads[d + n];
        ctx.check(p.begin[d] >= 0 && p.end[d] >= 0, "negative pads");
      }
    }
    return p;
  }
  if (auto_pad == "VALID") return p;
  ctx.check(auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER", "auto_pad '" + auto_pad + "' is not valid");
  for (std::size_t d = 0; d < n; ++d) {
    const std::int64_t out = (in[d] + stride[d] - 1) / stride[d];
    const std::int64_t total =
        std::max<std::int64_t>((out - 1) * stride[d] + (kernel[d] - 1) * dilation[d] + 1 - in[d], 0);
    const std::int64_t small = total / 2, large = total - small;
    p.begin[d] = auto_pad == "SAME_UPPER" ? small : large;
    p.end[d] = auto_pad == "SAME_UPPER" ? large : small;
  }
  return p;
}

std::vector<std::int64_t> spatial(const std::vector<std::int64_t>& shape) { return {shape.begin() + 2, shape.end()}; }

std::vector<std::int64_t> attr_or(const OpContext& ctx, const char* name, std::size_t n, std::int64_t fallback) {
  auto v = ctx.node.ints(name);
  if (v.empty()) v.assign(n, fallback);
  ctx.check(v.size() == n, std::string(name) + " has " + std::to_string(v.size()) + " values for " + std::to_string(n) +
                               " spatial dims");
  return v;
}

// Pads the spatial dims explicitly (kiln::pad takes pairs from the last dim).
Tensor pad_spatial(Tensor x, const SpatialPads& p, double value) {
  std::vector<std::int64_t> pads;
  for (std::size_t d = p.begin.size(); d-- > 0;) {
    pads.push_back(p.begin[d]);
    pads.push_back(p.end[d]);
  }
  return pad(std::move(x), pads, value);
}

// What Conv and ConvTranspose read alike: X and W, 3-D to 5-D of equal rank, and per spatial dim
// the kernel (kernel_shape, else W's), strides and dilations.
struct ConvInputs {
  Tensor x, w;
  std::size_t n = 0;  // spatial dims
  std::vector<std::int64_t> kernel, stride, dilation;
};

ConvInputs conv_inputs(const OpContext& ctx, const Values& in) {
  ctx.check(in.size() >= 2 && in[0].defined() && in[1].defined(), "needs X and W");
  ConvInputs c;
  c.x = ctx.tensor(in[0]);
  c.w = ctx.tensor(in[1]);
  ctx.check(c.x.rank() >= 3 && c.x.rank() <= 5 && c.w.rank() == c.x.rank(),
            "X " + c.x.shape().str() + " and W " + c.w.shape().str() + " must be 3-D to 5-D of equal rank");
  c.n = std::size_t(c.x.rank()) - 2;
  c.kernel = ctx.node.ints("kernel_shape");
  if (c.kernel.empty()) c.kernel = spatial(c.w.shape().to_vector());
  ctx.check(c.kernel.size() == c.n, "kernel_shape has " + std::to_string(c.kernel.size()) + " values for " +
                                        std::to_string(c.n) + " spatial dims");
  c.stride = attr_or(ctx, "strides", c.n, 1);
  c.dilation = attr_or(ctx, "dilations", c.n, 1);
  return c;
}

Values conv_op(OpContext& ctx, const Values& in) {
  auto [x, w, n, kernel, stride, dilation] = conv_inputs(ctx, in);
  Tensor b = ctx.has_input(in, 2) ? ctx.tensor(in[2]) : Tensor{};
  const auto pads = spatial_pads(ctx, spatial(x.shape().to_vector()), kernel, stride, dilation);
  ConvOptions o;
  o.stride = stride;
  o.dilation = dilation;
  o.groups = ctx.node.i("group", 1);
  if (pads.symmetric()) {
    o.padding = pads.begin;
  } else {
    x = pad_spatial(x, pads, 0.0);
    o.padding = Window(n, 0);
  }
  if (n == 1) return one(conv1d(x, w, b, o));
  if (n == 2) return one(conv2d(x, w, b, o));
  return one(conv3d(x, w, b, o));
}

Values conv_transpose_op(OpContext& ctx, const Values& in) {
  const auto [x, w, n, kernel, stride, dilation] = conv_inputs(ctx, in);
  auto out_pad = attr_or(ctx, "output_padding", n, 0);
  const auto in_sp = spatial(x.shape().to_vector());
  // The full output (no padding): every position some input touches.
  std::vector<std::int64_t> full_size(n), begin(n, 0), end(n, 0);
  for (std::size_t d = 0; d < n; ++d) full_size[d] = (in_sp[d] - 1) * stride[d] + (kernel[d] - 1) * dilation[d] + 1;
  const auto output_shape = ctx.node.ints("output_shape");
  const std::string auto_pad = ctx.node.s("auto_pad", "NOTSET");
  if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (std::size_t d = 0; d < n; ++d) {
      const std::int64_t target =
          !output_shape.empty() ? output_shape[output_shape.size() - n + d] : in_sp[d] * stride[d];
      const std::int64_t total = full_size[d] + out_pad[d] - target;
      // ONNX puts the odd pad at the end for SAME_UPPER (and for an explicit output_shape).
      begin[d] = auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;
      end[d] = total - begin[d];
    }
  } else {
    const auto pads = ctx.node.ints("pads");
    if (!pads.empty()) {
      ctx.check(pads.size() == 2 * n, "pads of the wrong length");
      for (std::size_t d = 0; d < n; ++d) {
        begin[d] = pads[d];
        end[d] = pads[d + n];
      }
    }
  }
  ConvTransposeOptions o;
  o.stride = stride;
  o.dilation = dilation;
  o.groups = ctx.node.i("group", 1);
  o.padding = Window(n, 0);
  Tensor y = n == 1   ? conv_transpose1d(x, w, {}, o)
             : n == 2 ? conv_transpose2d(x, w, {}, o)
                      : conv_transpose3d(x, w, {}, o);
  // output_padding adds positions no input reaches (zeros before the bias); pads crop.
  std::vector<std::int64_t> extra;
  bool any_extra = false;
  for (std::size_t d = n; d-- > 0;) {
    extra.push_back(0);
    extra.push_back(std::max<std::int64_t>(out_pad[d] - end[d], 0));
    any_extra = any_extra || extra.back() > 0;
  }
  if (any_extra) y = pad(y, extra, 0.0);
  for (std::size_t d = 0; d < n; ++d) {
    const std::int64_t size = full_size[d] + out_pad[d] - begin[d] - end[d];
    ctx.check(size > 0 && begin[d] >= 0, "pads leave no output");
    y = slice(y, std::int64_t(d) + 2, begin[d], begin[d] + size, 1);
  }
  if (ctx.has_input(in, 2)) {
    std::vector<std::int64_t> bshape(std::size_t(x.rank()), 1);
    bshape[1] = -1;
    y = y + reshape(ctx.tensor(in[2]), bshape);
  }
  return one(y);
}

Values pool_op(OpContext& ctx, const Values& in, bool is_max) {
  ctx.check(!in.empty() && in[0].defined(), "needs X");
  Tensor x = ctx.tensor(in[0]);
  const std::int64_t n = x.rank() - 2;
  if (n < 1 || n > 2) ctx.unsupported(std::to_string(n) + "-D pooling");
  if (!is_floating(x.dtype())) ctx.unsupported("integer pooling");
  const auto kernel = ctx.node.ints("kernel_shape");
  ctx.check(std::int64_t(kernel.size()) == n, "kernel_shape must have one value per spatial dim");
  const auto stride = attr_or(ctx, "strides", std::size_t(n), 1);
  const auto dilation = attr_or(ctx, "dilations", std::size_t(n), 1);
  if (!is_max) {
    for (auto d : dilation)
      if (d != 1) ctx.unsupported("dilated average pooling");
  }
  const auto pads = spatial_pads(ctx, spatial(x.shape().to_vector()), kernel, stride, dilation);
  PoolOptions o;
  o.kernel = kernel;
  o.stride = stride;
  o.dilation = dilation;
  o.ceil_mode = ctx.node.i("ceil_mode", 0) != 0;
  const bool count_include_pad = ctx.node.i("count_include_pad", 0) != 0;
  o.count_include_pad = count_include_pad;
  bool fits = pads.symmetric();
  for (std::size_t d = 0; d < pads.begin.size(); ++d) fits = fits && pads.begin[d] * 2 <= kernel[d];
  if (ctx.node.outputs.size() > 1 && !ctx.node.outputs[1].empty()) {
    ctx.check(is_max, "only MaxPool has Indices");
    if (ctx.node.i("storage_order", 0) != 0) ctx.unsupported("MaxPool Indices in column-major storage_order");
    if (!fits) ctx.unsupported("MaxPool Indices with asymmetric pads");
    o.padding = pads.begin;
    PoolResult r = n == 1 ? max_pool1d_with_indices(x, o) : max_pool2d_with_indices(x, o);
    // kiln's indices count within each (N, C) plane; ONNX's within the whole tensor.
    const auto s = x.shape();
    std::int64_t plane = 1;
    for (int d = 2; d < s.rank(); ++d) plane *= s[d];
    std::vector<std::int64_t> offset_shape(std::size_t(s.rank()), 1);
    offset_shape[0] = s[0];
    offset_shape[1] = s[1];
    const Tensor offsets =
        reshape(arange(0.0, double(s[0] * s[1]), 1.0, {DType::i64, ctx.device}) * double(plane), offset_shape);
    return Values{Value::of(r.values), Value::of(r.indices + offsets)};
  }
  if (fits) {
    o.padding = pads.begin;
    return one(is_max ? (n == 1 ? max_pool1d(x, o) : max_pool2d(x, o))
                      : (n == 1 ? avg_pool1d(x, o) : avg_pool2d(x, o)));
  }
  // Pads kiln cannot take: pad explicitly (-inf for max), and for an average that leaves the
  // pads out, divide the window sums by the count of real elements in each window.
  o.padding = Window(std::size_t(n), 0);
  if (is_max) {
    const Tensor padded = pad_spatial(x, pads, -std::numeric_limits<double>::infinity());
    return one(n == 1 ? max_pool1d(padded, o) : max_pool2d(padded, o));
  }
  o.count_include_pad = true;
  const Tensor padded = pad_spatial(x, pads, 0.0);
  const Tensor sums = n == 1 ? avg_pool1d(padded, o) : avg_pool2d(padded, o);
  if (count_include_pad) return one(sums);
  std::vector<std::int64_t> ones_shape = x.shape().to_vector();
  ones_shape[0] = ones_shape[1] = 1;
  const Tensor counts = pad_spatial(ones(Shape(ones_shape), {x.dtype(), ctx.device}), pads, 0.0);
  const Tensor fraction = n == 1 ? avg_pool1d(counts, o) : avg_pool2d(counts, o);
  return one(sums / fraction);
}

std::vector<std::int64_t> spatial_dims(const Tensor& x) {
  std::vector<std::int64_t> dims;
  for (std::int64_t d = 2; d < x.rank(); ++d) dims.push_back(d);
  return dims;
}

Values batch_norm_op(OpContext& ctx, const Values& in) {
  ctx.check(in.size() >= 5, "needs X, scale, B, mean and var");
  const Tensor x = ctx.tensor(in[0]), scale = ctx.tensor(in[1]), b = ctx.tensor(in[2]);
  const Tensor mean = ctx.tensor(in[3]), var = ctx.tensor(in[4]);
  const double eps = ctx.node.f("epsilon", 1e-5f), momentum = ctx.node.f("momentum", 0.9f);
  ctx.check(x.rank() >= 2, "X must have a channel dim, got " + x.shape().str());
  const bool node_training = ctx.opset >= 14 && ctx.node.i("training_mode", 0) != 0;
  if (node_training) {
    // The file asks for training: ONNX's statistics (biased variance in the running update).
    std::vector<std::int64_t> dims{0};
    for (std::int64_t d = 2; d < x.rank(); ++d) dims.push_back(d);
    std::vector<std::int64_t> cshape(std::size_t(x.rank()), 1);
    cshape[1] = -1;
    const Tensor m = kiln::mean(x, dims), v = kiln::var(x, dims, 0.0);
    const Tensor y =
        (x - reshape(m, cshape)) * rsqrt(reshape(v, cshape) + eps) * reshape(scale, cshape) + reshape(b, cshape);
    const Tensor rm = mean * momentum + m * (1.0 - momentum), rv = var * momentum + v * (1.0 - momentum);
    return Values{Value::of(y), Value::of(rm), Value::of(rv)};
  }
  // The module's mode: in training, torch's semantics (batch statistics, running statistics
  // updated with the unbiased variance, torch momentum = 1 - ONNX momentum).
  const auto r = nn::batch_norm(x, mean, var, scale, b, ctx.training, 1.0 - momentum, eps);
  if (ctx.training) {
    ctx.update_buffer(ctx.node.inputs[3], r.running_mean);
    ctx.update_buffer(ctx.node.inputs[4], r.running_var);
  }
  return one(r.output);
}

Values layer_norm_op(OpContext& ctx, const Values& in) {
  ctx.check(in.size() >= 2, "needs X and Scale");
  const Tensor x = ctx.tensor(in[0]), scale = ctx.tensor(in[1]);
  const std::int64_t axis = normalize_axis(ctx, ctx.node.i("axis", -1), x.rank());
  const double eps = ctx.node.f("epsilon", 1e-5f);
  std::vector<std::int64_t> dims;
  for (std::int64_t d = axis; d < x.rank(); ++d) dims.push_back(d);
  const Tensor m = kiln::mean(x, dims, true);
  const Tensor centered = x - m;
  const Tensor inv = rsqrt(kiln::mean(square(centered), dims, true) + eps);
  Tensor y = centered * inv * scale;
  if (ctx.has_input(in, 2)) y = y + ctx.tensor(in[2]);
  return Values{Value::of(y), Value::of(m), Value::of(inv)};
}

Values softmax_op(OpContext& ctx, const Values& in, bool log_form) {
  ctx.check(!in.empty() && in[0].defined(), "needs input");
  const Tensor x = ctx.tensor(in[0]);
  const std::int64_t axis = normalize_axis(ctx, ctx.node.i("axis", ctx.opset < 13 ? 1 : -1), x.rank());
  if (ctx.opset >= 13) return one(log_form ? log_softmax(x, axis) : softmax(x, axis));
  // Before opset 13: over the input flattened to [prod(dims < axis), prod(dims >= axis)].
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < x.rank(); ++d) (d < axis ? outer : inner) *= x.shape()[int(d)];
  const Tensor flat = reshape(x, {outer, inner});
  return one(reshape(log_form ? log_softmax(flat, 1) : softmax(flat, 1), x.shape().to_vector()));
}

// Resize and Upsample on 4-D inputs where they match kiln's interpolate2d: nearest with
// asymmetric coordinates and floor rounding (torch's nearest), bilinear with half_pixel (torch's
// align_corners=False) or align_corners coordinates. Other modes are reported unsupported.
Values resize_op(OpContext& ctx, const Values& in, bool upsample) {
  ctx.check(!in.empty() && in[0].defined(), "needs X");
  const Tensor x = ctx.tensor(in[0]);
  const auto shape = x.shape().to_vector();
  std::vector<double> scales;
  std::vector<std::int64_t> sizes;
  if (upsample) {
    if (ctx.opset < 9)
      for (float f : ctx.node.floats("scales")) scales.push_back(f);
    else
      scales = ctx.doubles(in.at(1));
  } else if (ctx.opset < 11) {
    scales = ctx.doubles(in.at(1));
  } else {
    if (ctx.has_input(in, 3)) sizes = ctx.ints(in[3]);
    if (sizes.empty() && ctx.has_input(in, 2)) scales = ctx.doubles(in[2]);
  }
  if (x.rank() != 4) ctx.unsupported("resizing a " + std::to_string(x.rank()) + "-D input");
  if (!sizes.empty()) {
    ctx.check(sizes.size() == 4, "sizes must have 4 values");
    if (sizes[0] != shape[0] || sizes[1] != shape[1]) ctx.unsupported("resizing the batch or channel dim");
  } else {
    ctx.check(scales.size() == 4, "scales must have 4 values");
    if (scales[0] != 1 || scales[1] != 1) ctx.unsupported("resizing the batch or channel dim");
  }
  const std::string mode = ctx.node.s("mode", "nearest");
  const std::string coords =
      ctx.node.s("coordinate_transformation_mode", upsample || ctx.opset < 11 ? "asymmetric" : "half_pixel");
  const std::string nearest_mode = ctx.node.s("nearest_mode", ctx.opset < 11 ? "floor" : "round_prefer_floor");
  InterpolateMode m;
  bool align_corners = false;
  if (mode == "nearest" && coords == "asymmetric" && (ctx.opset < 11 || nearest_mode == "floor")) {
    m = InterpolateMode::nearest;
  } else if (mode == "linear" &&
             (coords == "half_pixel" || coords == "pytorch_half_pixel" || coords == "align_corners") && !upsample) {
    m = InterpolateMode::bilinear;
    align_corners = coords == "align_corners";
    if (coords == "pytorch_half_pixel") {
      const std::int64_t oh = sizes.empty() ? std::int64_t(double(shape[2]) * scales[2]) : sizes[2];
      const std::int64_t ow = sizes.empty() ? std::int64_t(double(shape[3]) * scales[3]) : sizes[3];
      if (oh == 1 || ow == 1) ctx.unsupported("pytorch_half_pixel to a size of 1");
    }
  } else {
    ctx.unsupported("mode " + mode + " with " + coords + " coordinates" +
                    (mode == "nearest" ? " and " + nearest_mode : ""));
  }
  // align_corners maps coordinates by the sizes alone; ONNX's sizes from scales are not
  // floored there (in * scale), so only whole sizes map onto interpolate2d.
  if (sizes.empty() && align_corners) {
    const double h = double(shape[2]) * scales[2], w = double(shape[3]) * scales[3];
    if (h != std::floor(h) || w != std::floor(w))
      ctx.unsupported("align_corners with scales that give fractional sizes");
    sizes = {shape[0], shape[1], std::int64_t(h), std::int64_t(w)};
  }
  if (!sizes.empty()) return one(interpolate2d(x, Window{sizes[2], sizes[3]}, m, align_corners));
  return one(interpolate2d(x, std::vector<double>{scales[2], scales[3]}, m, align_corners));
}

}  // namespace

void add_nn_ops(OpTable& t) {
  t["Resize"] = [](OpContext& ctx, const Values& in) { return resize_op(ctx, in, false); };
  t["Upsample"] = [](OpContext& ctx, const Values& in) { return resize_op(ctx, in, true); };
  t["MatMul"] = [](OpContext& ctx, const Values& in) {
    ctx.check(in.size() == 2, "needs A and B");
    return one(matmul(ctx.tensor(in[0]), ctx.tensor(in[1])));
  };
  t["Gemm"] = [](OpContext& ctx, const Values& in) {
    ctx.check(in.size() >= 2, "needs A and B");
    const double alpha = ctx.node.f("alpha", 1.0f), beta = ctx.node.f("beta", 1.0f);
    Tensor y = matmul(ctx.tensor(in[0]), ctx.tensor(in[1]),
                      MatmulOptions{ctx.node.i("transA", 0) != 0, ctx.node.i("transB", 0) != 0});
    if (alpha != 1.0) y = y * alpha;
    if (ctx.has_input(in, 2)) {
      Tensor c = ctx.tensor(in[2]);
      y = y + (beta == 1.0 ? c : c * beta);
    }
    return one(y);
  };
  t["Conv"] = conv_op;
  t["ConvTranspose"] = conv_transpose_op;
  t["MaxPool"] = [](OpContext& ctx, const Values& in) { return pool_op(ctx, in, true); };
  t["AveragePool"] = [](OpContext& ctx, const Values& in) { return pool_op(ctx, in, false); };
  t["GlobalAveragePool"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs X");
    const Tensor x = ctx.tensor(in[0]);
    return one(kiln::mean(x, spatial_dims(x), true));
  };
  t["GlobalMaxPool"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs X");
    const Tensor x = ctx.tensor(in[0]);
    return one(kiln::max(x, spatial_dims(x), true));
  };
  t["BatchNormalization"] = batch_norm_op;
  t["LayerNormalization"] = layer_norm_op;
  t["InstanceNormalization"] = [](OpContext& ctx, const Values& in) {
    ctx.check(in.size() == 3, "needs input, scale and B");
    return one(
        nn::instance_norm(ctx.tensor(in[0]), ctx.tensor(in[1]), ctx.tensor(in[2]), ctx.node.f("epsilon", 1e-5f)));
  };
  t["Dropout"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs data");
    const Tensor x = ctx.tensor(in[0]);
    double ratio = ctx.node.f("ratio", 0.5f);
    if (ctx.has_input(in, 1)) ratio = ctx.doubles(in[1]).at(0);
    bool training = ctx.training;
    if (ctx.has_input(in, 2)) training = ctx.ints(in[2]).at(0) != 0;
    ctx.check(ratio >= 0 && ratio < 1, "ratio must be in [0, 1)");
    if (!training || ratio == 0)
      return Values{Value::of(x), Value::of(full(x.shape(), 1.0, {DType::bool_, ctx.device}))};
    const Tensor keep = gt(bernoulli(x.shape(), 1.0 - ratio, default_generator(), {x.dtype(), ctx.device}), 0.5);
    return Values{Value::of(where(keep, x / (1.0 - ratio), 0.0)), Value::of(keep)};
  };
  t["Softmax"] = [](OpContext& ctx, const Values& in) { return softmax_op(ctx, in, false); };
  t["LogSoftmax"] = [](OpContext& ctx, const Values& in) { return softmax_op(ctx, in, true); };
}

}  // namespace kiln::onnx::detail
