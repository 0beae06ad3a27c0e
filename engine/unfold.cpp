// unfold and fold: each window parameter expanded to one value per spatial dim on the caller's
// thread, then one message each (ops/op_list.def documents the attrs; ops/conv.cpp checks them).
#include "kiln/engine/unfold.h"

#include <string>

#include "kiln/engine/describe.h"
#include "kiln/engine/submit.h"

namespace kiln {

namespace {

using detail::describe;
using detail::ints_str;

// Appends `param` with one value per spatial dim: as given, or its single value repeated.
void append_per_dim(const char* op, const char* what, const Window& param, int s, const std::string& context,
                    std::vector<std::int64_t>& ints) {
  const auto n = static_cast<int>(param.size());
  KILN_CHECK(n == 1 || n == s, op,
             std::string(what) + " " + ints_str(param) + " must hold 1 or " + std::to_string(s) +
                 " values (one per spatial dim of " + context + ")");
  for (int d = 0; d < s; ++d) ints.push_back(param[n == 1 ? 0 : static_cast<std::size_t>(d)]);
}

std::vector<std::int64_t> window_ints(const char* op, int s, const std::string& context, const Window& kernel,
                                      const Window& dilation, const Window& padding, const Window& stride) {
  std::vector<std::int64_t> ints;
  ints.reserve(1 + 5 * static_cast<std::size_t>(s));
  ints.push_back(s);
  append_per_dim(op, "kernel", kernel, s, context, ints);
  append_per_dim(op, "dilation", dilation, s, context, ints);
  append_per_dim(op, "padding", padding, s, context, ints);
  append_per_dim(op, "stride", stride, s, context, ints);
  return ints;
}

}  // namespace

Tensor unfold(Tensor x, const Window& kernel, const Window& dilation, const Window& padding, const Window& stride,
              double pad_value) {
  KILN_CHECK(x.defined(), "unfold", "the input is an undefined tensor");
  KILN_CHECK(x.rank() >= 3 && x.rank() <= 5, "unfold",
             "expected an input [N, C, *spatial] with 1 to 3 spatial dims (rank 3 to 5), got " + describe(x));
  OpAttrs a;
  a.ints = window_ints("unfold", x.rank() - 2, "input " + describe(x), kernel, dilation, padding, stride);
  a.scalar = pad_value;
  return detail::submit1(OpKind::unfold, std::move(x), std::move(a));
}

Tensor fold(Tensor cols, const Window& output_size, const Window& kernel, const Window& dilation, const Window& padding,
            const Window& stride) {
  KILN_CHECK(cols.defined(), "fold", "the columns are an undefined tensor");
  const auto s = static_cast<int>(output_size.size());
  KILN_CHECK(
      s >= 1 && s <= 3, "fold",
      "output_size " + ints_str(output_size) + " must name 1 to 3 spatial dims (columns " + describe(cols) + ")");
  OpAttrs a;
  a.ints = window_ints("fold", s, "output_size " + ints_str(output_size), kernel, dilation, padding, stride);
  a.ints.insert(a.ints.end(), output_size.begin(), output_size.end());
  return detail::submit1(OpKind::fold, std::move(cols), std::move(a));
}

}  // namespace kiln
