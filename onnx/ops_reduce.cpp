// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax/ArgMin,
// CumSum, TopK. Axes come from the attribute (or, for ReduceSum from opset 13, an input).
#include "kiln/onnx/op_registry.h"

namespace kiln::onnx::detail {
namespace {

using Reduce = std::function<Tensor(Tensor, const Dims&, bool)>;

void reduction(OpTable& t, const std::string& name, Reduce fn) {
  t[name] = [fn, name](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs data");
    const bool axes_input = name == "ReduceSum" && ctx.opset >= 13;
    std::vector<std::int64_t> axes =
        axes_input ? (ctx.has_input(in, 1) ? ctx.ints(in[1]) : std::vector<std::int64_t>{}) : ctx.node.ints("axes");
    const bool keep = ctx.node.i("keepdims", 1) != 0;
    Tensor x = ctx.tensor(in[0]);
    if (axes.empty() && axes_input && ctx.node.i("noop_with_empty_axes", 0) != 0) return Values{Value::of(x)};
    Dims dims;
    for (auto a : axes) dims.push_back(normalize_axis(ctx, a, x.rank()));
    if (dims.empty())
      for (std::int64_t d = 0; d < x.rank(); ++d) dims.push_back(d);
    if (x.rank() == 0) return Values{Value::of(x)};
    return Values{Value::of(fn(x, dims, keep))};
  };
}

Values arg_op(OpContext& ctx, const Values& in, bool is_max) {
  ctx.check(!in.empty() && in[0].defined(), "needs data");
  Tensor x = ctx.tensor(in[0]);
  const std::int64_t axis = normalize_axis(ctx, ctx.node.i("axis", 0), x.rank());
  const bool keep = ctx.node.i("keepdims", 1) != 0;
  if (ctx.node.i("select_last_index", 0) != 0) {
    // The last of equal values: the first in the flipped axis, counted from the end.
    const Tensor flipped = flip(x, {axis});
    const Tensor idx = is_max ? argmax(flipped, axis, keep) : argmin(flipped, axis, keep);
    return Values{Value::of((idx * -1.0) + double(x.shape()[int(axis)] - 1))};
  }
  return Values{Value::of(is_max ? argmax(x, axis, keep) : argmin(x, axis, keep))};
}

}  // namespace

void add_reduce_ops(OpTable& t) {
  reduction(t, "ReduceSum", [](Tensor x, const Dims& d, bool k) { return sum(x, d, k); });
  reduction(t, "ReduceMean", [](Tensor x, const Dims& d, bool k) { return mean(x, d, k); });
  reduction(t, "ReduceMax", [](Tensor x, const Dims& d, bool k) { return max(x, d, k); });
  reduction(t, "ReduceMin", [](Tensor x, const Dims& d, bool k) { return min(x, d, k); });
  reduction(t, "ReduceProd", [](Tensor x, const Dims& d, bool k) { return prod(x, d, k); });
  reduction(t, "ReduceL1", [](Tensor x, const Dims& d, bool k) { return sum(abs(x), d, k); });
  reduction(t, "ReduceL2", [](Tensor x, const Dims& d, bool k) { return sqrt(sum(square(x), d, k)); });
  reduction(t, "ReduceSumSquare", [](Tensor x, const Dims& d, bool k) { return sum(square(x), d, k); });
  reduction(t, "ReduceLogSum", [](Tensor x, const Dims& d, bool k) { return log(sum(x, d, k)); });
  reduction(t, "ReduceLogSumExp", [](Tensor x, const Dims& d, bool k) { return logsumexp(x, d, k); });
  t["ArgMax"] = [](OpContext& ctx, const Values& in) { return arg_op(ctx, in, true); };
  t["ArgMin"] = [](OpContext& ctx, const Values& in) { return arg_op(ctx, in, false); };
  t["CumSum"] = [](OpContext& ctx, const Values& in) {
    ctx.check(in.size() == 2, "needs x and axis");
    Tensor x = ctx.tensor(in[0]);
    const std::int64_t axis = normalize_axis(ctx, ctx.ints(in[1]).at(0), x.rank());
    const bool exclusive = ctx.node.i("exclusive", 0) != 0, reverse = ctx.node.i("reverse", 0) != 0;
    if (reverse) x = flip(x, {axis});
    Tensor y = cumsum(x, axis);
    if (exclusive) y = y - x;
    if (reverse) y = flip(y, {axis});
    return Values{Value::of(y)};
  };
  t["TopK"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs X");
    const Tensor x = ctx.tensor(in[0]);
    const std::int64_t k = ctx.opset < 10 ? ctx.node.i("k", 1) : ctx.ints(in.at(1)).at(0);
    const std::int64_t axis = normalize_axis(ctx, ctx.node.i("axis", -1), x.rank());
    ctx.check(k >= 0 && k <= x.shape()[int(axis)], "k out of range");
    auto [values, indices] = topk(x, k, axis, ctx.node.i("largest", 1) != 0);
    return Values{Value::of(values), Value::of(indices)};
  };
}

}  // namespace kiln::onnx::detail
