// unfold and fold: each window parameter expanded to one value per spatial dim on the caller's
// thread, then one message each, its attrs a WindowAttrs (ops/attrs_window.h; ops/conv.cpp
// checks them).
#include "kiln/engine/unfold.h"

#include <algorithm>
#include <string>

#include "kiln/engine/describe.h"
#include "kiln/engine/submit.h"
#include "kiln/ops/attrs_window.h"

namespace kiln {

namespace {

using detail::describe;
using detail::ints_str;

// `param` with one value per spatial dim: as given, or its single value repeated.
Spatial spatial_of(const char* op, const char* what, const Window& param, int s, const std::string& context) {
  const auto n = static_cast<int>(param.size());
  KILN_CHECK(n == 1 || n == s, op,
             std::string(what) + " " + ints_str(param) + " must hold 1 or " + std::to_string(s) +
                 " values (one per spatial dim of " + context + ")");
  Spatial v{};
  for (int d = 0; d < s; ++d) v[static_cast<std::size_t>(d)] = param[n == 1 ? 0 : static_cast<std::size_t>(d)];
  return v;
}

WindowAttrs window_attrs(const char* op, int s, const std::string& context, const Window& kernel,
                         const Window& dilation, const Window& padding, const Window& stride) {
  WindowAttrs w;
  w.dims = s;
  w.kernel = spatial_of(op, "kernel", kernel, s, context);
  w.dilation = spatial_of(op, "dilation", dilation, s, context);
  w.padding = spatial_of(op, "padding", padding, s, context);
  w.stride = spatial_of(op, "stride", stride, s, context);
  return w;
}

}  // namespace

Tensor unfold(Tensor x, const Window& kernel, const Window& dilation, const Window& padding, const Window& stride,
              double pad_value) {
  KILN_CHECK(x.defined(), "unfold", "the input is an undefined tensor");
  KILN_CHECK(x.rank() >= 3 && x.rank() <= 5, "unfold",
             "expected an input [N, C, *spatial] with 1 to 3 spatial dims (rank 3 to 5), got " + describe(x));
  WindowAttrs w = window_attrs("unfold", x.rank() - 2, "input " + describe(x), kernel, dilation, padding, stride);
  w.pad_value = pad_value;
  return detail::submit1(OpKind::unfold, std::move(x), w.encode(OpKind::unfold));
}

Tensor fold(Tensor cols, const Window& output_size, const Window& kernel, const Window& dilation, const Window& padding,
            const Window& stride) {
  KILN_CHECK(cols.defined(), "fold", "the columns are an undefined tensor");
  const auto s = static_cast<int>(output_size.size());
  KILN_CHECK(
      s >= 1 && s <= 3, "fold",
      "output_size " + ints_str(output_size) + " must name 1 to 3 spatial dims (columns " + describe(cols) + ")");
  WindowAttrs w = window_attrs("fold", s, "output_size " + ints_str(output_size), kernel, dilation, padding, stride);
  std::copy(output_size.begin(), output_size.end(), w.output_size.begin());
  return detail::submit1(OpKind::fold, std::move(cols), w.encode(OpKind::fold));
}

}  // namespace kiln
