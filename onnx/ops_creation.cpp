// ONNX ops that make values or pad them: Constant, ConstantOfShape, Range (host values when small,
// as shape arithmetic uses them) and Pad (constant, reflect and edge modes, negative pads crop).
#include <cmath>

#include "kiln/onnx/host_eval.h"
#include "kiln/onnx/op_registry.h"

namespace kiln::onnx::detail {
namespace {

Values range_op(OpContext& ctx, const Values& in) {
  ctx.check(in.size() == 3, "needs start, limit and delta");
  const double start = ctx.doubles(in[0]).at(0), limit = ctx.doubles(in[1]).at(0), delta = ctx.doubles(in[2]).at(0);
  ctx.check(delta != 0 && std::isfinite(start) && std::isfinite(limit) && std::isfinite(delta),
            "bad start, limit or delta");
  const double count = std::max(std::ceil((limit - start) / delta), 0.0);
  ctx.check(count <= double(std::int64_t(1) << 40), "too many elements");
  const auto n = std::int64_t(count);
  HostTensor r;
  r.dtype = in[0].dtype();
  r.shape = {n};
  const HostTensor s = ctx.host(in[0]), d = ctx.host(in[2]);
  for (std::int64_t i = 0; i < n; ++i) {
    if (r.is_integer())
      r.ints.push_back(s.ints[0] + i * d.ints[0]);
    else
      r.floats.push_back(float(s.floats[0] + float(i) * d.floats[0]));
  }
  if (n <= kHostLimit) return one(Value::of(std::move(r)));
  return one(Value::of(r.to_tensor(ctx.device)));
}

Values constant_of_shape_op(OpContext& ctx, const Values& in) {
  ctx.check(!in.empty(), "needs a shape");
  const auto shape = ctx.ints(in[0]);
  for (auto d : shape) ctx.check(d >= 0, "negative dim in " + shape_str(shape));
  HostTensor value = HostTensor::of_floats({0.0f}, {1});
  if (ctx.node.has("value")) {
    const auto& t = ctx.node.attribute("value").t;
    ctx.check(t && t->size() == 1, "value must be a tensor of one element");
    value = *t;
  }
  const std::int64_t n = shape_numel(shape);
  if (n <= kHostLimit) {
    HostTensor r;
    r.dtype = value.dtype;
    r.shape = shape;
    if (r.is_integer())
      r.ints.assign(std::size_t(n), value.ints[0]);
    else
      r.floats.assign(std::size_t(n), value.floats[0]);
    return one(Value::of(std::move(r)));
  }
  return one(Value::of(full(Shape(shape), value.at(0), {value.dtype, ctx.device})));
}

Values constant_op(OpContext& ctx, const Values&) {
  const auto& n = ctx.node;
  if (n.has("value")) return one(Value{Tensor{}, n.attribute("value").t});
  if (n.has("value_float")) return one(Value::of(HostTensor::of_floats({n.f("value_float", 0)}, {})));
  if (n.has("value_floats")) {
    auto f = n.floats("value_floats");
    const auto size = std::int64_t(f.size());
    return one(Value::of(HostTensor::of_floats(std::move(f), {size})));
  }
  if (n.has("value_int")) return one(Value::of(HostTensor::of_ints({n.i("value_int", 0)}, {})));
  if (n.has("value_ints")) {
    auto v = n.ints("value_ints");
    const auto size = std::int64_t(v.size());
    return one(Value::of(HostTensor::of_ints(std::move(v), {size})));
  }
  ctx.unsupported("a Constant without a tensor, float(s) or int(s) value");
}

// Pad's reflect and edge modes pick source rows through index_select, one axis at a time.
Tensor pad_by_index(const OpContext& ctx, Tensor x, std::int64_t axis, std::int64_t before, std::int64_t after,
                    bool reflect) {
  const std::int64_t n = x.shape()[int(axis)];
  ctx.check(n > 0 && (!reflect || (n > 1 && before < n && after < n)), "pads too large for reflect mode");
  std::vector<std::int64_t> idx;
  for (std::int64_t i = -before; i < n + after; ++i) {
    std::int64_t j = i;
    if (reflect) {
      if (j < 0) j = -j;
      if (j >= n) j = 2 * (n - 1) - j;
    } else {
      j = std::clamp<std::int64_t>(j, 0, n - 1);
    }
    idx.push_back(j);
  }
  const auto size = std::int64_t(idx.size());
  return index_select(x, axis, from_vector(idx, {size}, ctx.device));
}

Values pad_op(OpContext& ctx, const Values& in) {
  ctx.check(!in.empty() && in[0].defined(), "needs data");
  std::vector<std::int64_t> pads;
  double value = 0;
  if (ctx.opset < 11) {
    pads = ctx.node.ints("pads");
    value = ctx.node.f("value", 0);
  } else {
    ctx.check(ctx.has_input(in, 1), "needs pads");
    pads = ctx.ints(in[1]);
    if (ctx.has_input(in, 2)) {
      const auto v = ctx.doubles(in[2]);
      if (!v.empty()) value = v[0];
    }
  }
  const std::string mode = ctx.node.s("mode", "constant");
  Tensor x = ctx.tensor(in[0]);
  const std::int64_t rank = x.rank();
  ctx.check(std::int64_t(pads.size()) == 2 * rank,
            "pads has " + std::to_string(pads.size()) + " values for rank " + std::to_string(rank));
  // Negative pads crop first.
  for (std::int64_t d = 0; d < rank; ++d) {
    const std::int64_t b = pads[std::size_t(d)], e = pads[std::size_t(d + rank)];
    if (b < 0 || e < 0) {
      const std::int64_t n = x.shape()[int(d)];
      const std::int64_t s = std::max<std::int64_t>(-b, 0), stop = n - std::max<std::int64_t>(-e, 0);
      ctx.check(stop >= s, "negative pads crop more than the dim");
      x = slice(x, d, s, stop, 1);
    }
  }
  if (mode == "constant") {
    std::vector<std::int64_t> torch_pads;
    for (std::int64_t d = rank - 1; d >= 0; --d) {
      torch_pads.push_back(std::max<std::int64_t>(pads[std::size_t(d)], 0));
      torch_pads.push_back(std::max<std::int64_t>(pads[std::size_t(d + rank)], 0));
    }
    return one(Value::of(pad(x, torch_pads, value)));
  }
  ctx.check(mode == "reflect" || mode == "edge", "mode '" + mode + "' is not one of constant, reflect, edge");
  for (std::int64_t d = 0; d < rank; ++d) {
    const std::int64_t b = std::max<std::int64_t>(pads[std::size_t(d)], 0),
                       e = std::max<std::int64_t>(pads[std::size_t(d + rank)], 0);
    if (b || e) x = pad_by_index(ctx, x, d, b, e, mode == "reflect");
  }
  return one(Value::of(x));
}

}  // namespace

void add_creation_ops(OpTable& t) {
  t["Range"] = range_op;
  t["ConstantOfShape"] = constant_of_shape_op;
  t["Constant"] = constant_op;
  t["Pad"] = pad_op;
}

}  // namespace kiln::onnx::detail
