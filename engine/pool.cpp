// Max and average pooling as one op each (max_pool, avg_pool: ops/attrs_window.h's PoolAttrs);
// autograd's pool rules answer them with max_pool_grad and avg_pool_grad. A device without
// kernels for them runs the composite of unfold and reductions that ops/decompositions.h
// rewrites them into. Every check happens here, on the caller's thread, in the user's words
// (the options as given, the input's shape); an unbatched input gains its batch dim as a view.
#include "kiln/engine/pool.h"

#include <algorithm>
#include <limits>
#include <string>

#include "kiln/engine/submit.h"
#include "kiln/engine/window_args.h"
#include "kiln/ops/attrs_window.h"

namespace kiln {

namespace {

using detail::describe;
using detail::ints_str;

// The op's attrs from the options, one value per spatial dim, checked against the input.
// `w` with one value per spatial dim, each at least `min_value`: the error names the input too.
Window pool_window(const char* op, const char* what, const Window& w, int dims, std::int64_t min_value, const Tensor& x) {
  Window v = detail::per_dim(op, what, w, dims, std::numeric_limits<std::int64_t>::min());
  for (std::int64_t e : v)
    KILN_CHECK(e >= min_value, op,
               std::string(what) + " " + ints_str(w) + " must be at least " + std::to_string(min_value) + " (input " +
                   describe(x) + ")");
  return v;
}

PoolAttrs pool_attrs(const char* op, int dims, const Tensor& x, const Tensor& xb, const PoolOptions& o, bool dilated) {
  const Window kernel = pool_window(op, "kernel", o.kernel, dims, 1, x);
  const Window stride = o.stride.empty() ? kernel : pool_window(op, "stride", o.stride, dims, 1, x);
  const Window padding = pool_window(op, "padding", o.padding, dims, 0, x);
  const Window dilation = pool_window(op, "dilation", o.dilation, dims, 1, x);
  PoolAttrs a;
  a.dims = dims;
  a.ceil_mode = o.ceil_mode;
  a.count_include_pad = o.count_include_pad;
  for (int d = 0; d < dims; ++d) {
    const auto i = static_cast<std::size_t>(d);
    KILN_CHECK(dilated || dilation[i] == 1, op,
               "average pooling takes no dilation, got " + ints_str(o.dilation) + " (input " + describe(x) + ")");
    KILN_CHECK(2 * padding[i] <= kernel[i], op,
               "padding " + ints_str(o.padding) + " must be at most half the kernel " + ints_str(o.kernel) +
                   " (input " + describe(x) + ")");
    a.kernel[i] = kernel[i];
    a.stride[i] = stride[i];
    a.padding[i] = padding[i];
    a.dilation[i] = dilation[i];
  }
  Window out;
  for (int d = 0; d < dims; ++d) out.push_back(a.output_size(d, xb.size(2 + d)));
  for (std::int64_t v : out)
    KILN_CHECK(v >= 1, op,
               "the output would be " + ints_str(out) + " for input " + describe(x) + " (kernel " + ints_str(kernel) +
                   ", stride " + ints_str(stride) + ", padding " + ints_str(padding) + ", dilation " +
                   ints_str(dilation) + "): too small");
  return a;
}

PoolResult max_pool_nd(const char* op, int dims, const Tensor& x, const PoolOptions& o, bool with_indices) {
  auto [xb, unbatched] = detail::batched_input(op, x, dims);
  PoolAttrs a = pool_attrs(op, dims, x, xb, o, /*dilated=*/true);
  // The gradient needs the indices: a tensor in a backward graph always gets them.
  a.with_indices = with_indices || xb.state()->autograd != nullptr;
  const Device device = xb.device();
  std::vector<Tensor> outs = detail::submit(OpKind::max_pool, &xb, 1, a.encode(OpKind::max_pool), device);
  PoolResult r;
  r.values = detail::unbatched_result(std::move(outs[0]), unbatched);
  if (with_indices) r.indices = detail::unbatched_result(std::move(outs[1]), unbatched);
  return r;
}

Tensor avg_pool_nd(const char* op, int dims, const Tensor& x, const PoolOptions& o) {
  auto [xb, unbatched] = detail::batched_input(op, x, dims);
  const PoolAttrs a = pool_attrs(op, dims, x, xb, o, /*dilated=*/false);
  return detail::unbatched_result(detail::submit1(OpKind::avg_pool, std::move(xb), a.encode(OpKind::avg_pool)),
                                  unbatched);
}

}  // namespace

Tensor max_pool1d(Tensor x, const PoolOptions& o) { return max_pool_nd("max_pool1d", 1, x, o, false).values; }
Tensor max_pool2d(Tensor x, const PoolOptions& o) { return max_pool_nd("max_pool2d", 2, x, o, false).values; }
PoolResult max_pool1d_with_indices(Tensor x, const PoolOptions& o) { return max_pool_nd("max_pool1d", 1, x, o, true); }
PoolResult max_pool2d_with_indices(Tensor x, const PoolOptions& o) { return max_pool_nd("max_pool2d", 2, x, o, true); }
Tensor avg_pool1d(Tensor x, const PoolOptions& o) { return avg_pool_nd("avg_pool1d", 1, x, o); }
Tensor avg_pool2d(Tensor x, const PoolOptions& o) { return avg_pool_nd("avg_pool2d", 2, x, o); }

}  // namespace kiln
