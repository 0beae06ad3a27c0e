// Shape and layout ONNX ops: Shape, Reshape, Flatten, Transpose, (Un)Squeeze, Concat, Split,
// Slice, Gather(Elements), Expand, Tile, Trilu, Scatter(Elements).
// Those that shape arithmetic uses have host forms: on host values (Shape's output, integer
// initializers, Constant) they compute on the host.
#include <cmath>
#include <numeric>

#include "kiln/onnx/host_eval.h"
#include "kiln/onnx/op_registry.h"

namespace kiln::onnx::detail {
namespace {

// A value with new dims and the same elements (host stays host).
Value reshaped(const OpContext& ctx, const Value& x, const std::vector<std::int64_t>& shape) {
  ctx.check(shape_numel(shape) == shape_numel(x.shape()),
            "cannot reshape " + shape_str(x.shape()) + " to " + shape_str(shape));
  if (x.on_host()) {
    HostTensor h = *x.host;
    h.shape = shape;
    return Value::of(std::move(h));
  }
  return Value::of(reshape(ctx.tensor(x), shape));
}

// Reshape's target: 0 copies the input's dim (unless allowzero), -1 is inferred.
std::vector<std::int64_t> reshape_target(const OpContext& ctx, const std::vector<std::int64_t>& in,
                                         std::vector<std::int64_t> shape, bool allowzero) {
  std::int64_t known = 1, infer = -1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0 && !allowzero) {
      ctx.check(k < in.size(),
                "shape " + shape_str(shape) + " copies dim " + std::to_string(k) + " of " + shape_str(in));
      shape[k] = in[k];
    }
    if (shape[k] == -1) {
      ctx.check(infer < 0, "shape " + shape_str(shape) + " has more than one -1");
      infer = std::int64_t(k);
    } else {
      ctx.check(shape[k] >= 0, "shape " + shape_str(shape) + " has a negative dim");
      known *= shape[k];
    }
  }
  if (infer >= 0) {
    const std::int64_t total = shape_numel(in);
    ctx.check(known != 0 && total % known == 0, "cannot reshape " + shape_str(in) + " to " + shape_str(shape));
    shape[std::size_t(infer)] = total / known;
  }
  return shape;
}

// Axes from the attribute (older opsets) or from input k (newer).
std::vector<std::int64_t> axes_of(const OpContext& ctx, const Values& in, std::size_t k, const char* attr = "axes") {
  if (ctx.has_input(in, k)) return ctx.ints(in[k]);
  return ctx.node.ints(attr);
}

Value host_concat(const std::vector<const HostTensor*>& xs, std::int64_t axis) {
  HostTensor r;
  r.dtype = xs[0]->dtype;
  r.shape = xs[0]->shape;
  r.shape[std::size_t(axis)] = 0;
  for (const auto* x : xs) r.shape[std::size_t(axis)] += x->shape[std::size_t(axis)];
  std::int64_t outer = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= r.shape[std::size_t(d)];
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const auto* x : xs) {
      const std::int64_t inner = outer == 0 ? 0 : x->numel() / outer;
      for (std::int64_t k = 0; k < inner; ++k) {
        const auto src = std::size_t(o * inner + k);
        if (r.is_integer())
          r.ints.push_back(x->ints[src]);
        else
          r.floats.push_back(x->floats[src]);
      }
    }
  }
  return Value::of(std::move(r));
}

Values concat_op(OpContext& ctx, const Values& in) {
  ctx.check(!in.empty(), "needs inputs");
  const std::int64_t rank = in[0].rank();
  const std::int64_t axis = normalize_axis(ctx, ctx.node.i("axis", 0), rank);
  for (const auto& v : in) {
    ctx.check(v.defined() && v.rank() == rank, "inputs differ in rank");
    for (std::int64_t d = 0; d < rank; ++d) {
      ctx.check(d == axis || v.shape()[std::size_t(d)] == in[0].shape()[std::size_t(d)],
                "shapes " + shape_str(in[0].shape()) + " and " + shape_str(v.shape()) + " differ outside axis " +
                    std::to_string(axis));
    }
  }
  if (all_on_host(in)) {
    std::vector<const HostTensor*> xs;
    std::int64_t n = 0;
    for (const auto& v : in) {
      xs.push_back(v.host.get());
      n += v.host->numel();
      ctx.check(v.dtype() == in[0].dtype(), "inputs differ in type");
    }
    if (n <= kHostLimit) return one(host_concat(xs, axis));
  }
  std::vector<Tensor> ts;
  for (const auto& v : in)
    if (shape_numel(v.shape()) > 0 || in.size() == 1) ts.push_back(ctx.tensor(v));
  if (ts.empty()) ts.push_back(ctx.tensor(in[0]));
  if (ts.size() == 1) {
    // Only one non-empty input: the result is that input (with the other inputs' zero dims).
    std::vector<std::int64_t> shape = in[0].shape();
    shape[std::size_t(axis)] = 0;
    for (const auto& v : in) shape[std::size_t(axis)] += v.shape()[std::size_t(axis)];
    return one(Value::of(reshape(ts[0], shape)));
  }
  return one(Value::of(cat(ts, axis)));
}

// Gather on the host: data of any rank, indices of any rank.
Value host_gather(const OpContext& ctx, const HostTensor& data, const HostTensor& idx, std::int64_t axis) {
  const auto& ds = data.shape;
  const std::int64_t n = ds[std::size_t(axis)];
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= ds[std::size_t(d)];
  for (std::size_t d = std::size_t(axis) + 1; d < ds.size(); ++d) inner *= ds[d];
  HostTensor r;
  r.dtype = data.dtype;
  r.shape.assign(ds.begin(), ds.begin() + axis);
  r.shape.insert(r.shape.end(), idx.shape.begin(), idx.shape.end());
  r.shape.insert(r.shape.end(), ds.begin() + axis + 1, ds.end());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::size_t k = 0; k < idx.ints.size(); ++k) {
      std::int64_t i = idx.ints[k];
      if (i < 0) i += n;
      ctx.check(i >= 0 && i < n,
                "index " + std::to_string(idx.ints[k]) + " is out of range for a dim of " + std::to_string(n));
      for (std::int64_t j = 0; j < inner; ++j) {
        const auto src = std::size_t((o * n + i) * inner + j);
        if (r.is_integer())
          r.ints.push_back(data.ints[src]);
        else
          r.floats.push_back(data.floats[src]);
      }
    }
  }
  return Value::of(std::move(r));
}

Values gather_op(OpContext& ctx, const Values& in) {
  ctx.check(in.size() == 2, "needs data and indices");
  const auto ds = in[0].shape();
  ctx.check(!ds.empty(), "data must have at least one dim");
  const std::int64_t axis = normalize_axis(ctx, ctx.node.i("axis", 0), std::int64_t(ds.size()));
  ctx.check(in[1].dtype() == DType::i64, "indices must be integers");
  if (all_on_host(in) && in[0].host->numel() <= kHostLimit)
    return one(host_gather(ctx, *in[0].host, *in[1].host, axis));
  const Tensor data = ctx.tensor(in[0]);
  const std::int64_t n = ds[std::size_t(axis)];
  Tensor idx;
  if (in[1].on_host()) {
    HostTensor h = *in[1].host;
    for (auto& i : h.ints) {
      if (i < 0) i += n;
      ctx.check(i >= 0 && i < n, "index out of range for a dim of " + std::to_string(n));
    }
    idx = h.to_tensor(ctx.device);
  } else {
    idx = ctx.tensor(in[1]);
    idx = where(lt(idx, 0.0), idx + double(n), idx);
  }
  const auto is = idx.shape().to_vector();
  Tensor flat = reshape(idx, {shape_numel(is)});
  Tensor picked = index_select(data, axis, flat);
  std::vector<std::int64_t> out(ds.begin(), ds.begin() + axis);
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), ds.begin() + axis + 1, ds.end());
  return one(Value::of(reshape(picked, out)));
}

// Slice on one axis with ONNX's clamping; a negative step reads a flipped axis.
Tensor slice_axis(const OpContext& ctx, Tensor x, std::int64_t axis, std::int64_t start, std::int64_t end,
                  std::int64_t step) {
  ctx.check(step != 0, "step 0");
  const std::int64_t dim = x.shape()[int(axis)];
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<std::int64_t>(start, 0, dim);
    end = std::clamp<std::int64_t>(end, 0, dim);
    if (end <= start) return slice(x, axis, 0, 0, 1);
    return slice(x, axis, start, end, step);
  }
  start = std::clamp<std::int64_t>(start, 0, dim - 1);
  end = std::clamp<std::int64_t>(end, -1, dim - 1);
  if (start <= end || dim == 0) return slice(x, axis, 0, 0, 1);
  // Flipped, element i of the axis sits at dim - 1 - i.
  return slice(flip(x, {axis}), axis, dim - 1 - start, dim - 1 - end, -step);
}

Values slice_op(OpContext& ctx, const Values& in) {
  ctx.check(!in.empty() && in[0].defined(), "needs data");
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.node.ints("starts");
    ends = ctx.node.ints("ends");
    axes = ctx.node.ints("axes");
  } else {
    ctx.check(in.size() >= 3, "needs data, starts and ends");
    starts = ctx.ints(in[1]);
    ends = ctx.ints(in[2]);
    if (ctx.has_input(in, 3)) axes = ctx.ints(in[3]);
    if (ctx.has_input(in, 4)) steps = ctx.ints(in[4]);
  }
  const std::int64_t rank = in[0].rank();
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  ctx.check(starts.size() == ends.size() && axes.size() == starts.size() && steps.size() == starts.size(),
            "starts, ends, axes and steps differ in length");
  if (in[0].on_host() && rank == 1 && in[0].host->numel() <= kHostLimit) {
    const HostTensor& h = *in[0].host;
    std::int64_t dim = h.shape[0], start = starts[0], end = ends[0], step = steps[0];
    normalize_axis(ctx, axes[0], 1);
    ctx.check(step != 0, "step 0");
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    HostTensor r;
    r.dtype = h.dtype;
    if (step > 0) {
      start = std::clamp<std::int64_t>(start, 0, dim);
      end = std::clamp<std::int64_t>(end, 0, dim);
      for (std::int64_t i = start; i < end; i += step) {
        if (h.is_integer())
          r.ints.push_back(h.ints[std::size_t(i)]);
        else
          r.floats.push_back(h.floats[std::size_t(i)]);
      }
    } else {
      start = std::clamp<std::int64_t>(start, 0, dim - 1);
      end = std::clamp<std::int64_t>(end, -1, dim - 1);
      for (std::int64_t i = start; i > end; i += step) {
        if (h.is_integer())
          r.ints.push_back(h.ints[std::size_t(i)]);
        else
          r.floats.push_back(h.floats[std::size_t(i)]);
      }
    }
    r.shape = {std::int64_t(r.size())};
    return one(Value::of(std::move(r)));
  }
  Tensor x = ctx.tensor(in[0]);
  for (std::size_t k = 0; k < axes.size(); ++k) {
    x = slice_axis(ctx, x, normalize_axis(ctx, axes[k], rank), starts[k], ends[k], steps[k]);
  }
  return one(Value::of(x));
}

Values squeeze_op(OpContext& ctx, const Values& in) {
  ctx.check(!in.empty() && in[0].defined(), "needs data");
  const auto shape = in[0].shape();
  const std::int64_t rank = std::int64_t(shape.size());
  auto axes = axes_of(ctx, in, 1);
  std::vector<bool> drop(shape.size(), false);
  if (axes.empty()) {
    for (std::size_t d = 0; d < shape.size(); ++d) drop[d] = shape[d] == 1;
  } else {
    for (auto a : axes) {
      const auto d = std::size_t(normalize_axis(ctx, a, rank));
      ctx.check(shape[d] == 1, "cannot squeeze dim " + std::to_string(a) + " of " + shape_str(shape));
      drop[d] = true;
    }
  }
  std::vector<std::int64_t> out;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (!drop[d]) out.push_back(shape[d]);
  return one(reshaped(ctx, in[0], out));
}

Values unsqueeze_op(OpContext& ctx, const Values& in) {
  ctx.check(!in.empty() && in[0].defined(), "needs data");
  const auto shape = in[0].shape();
  auto axes = axes_of(ctx, in, 1);
  const std::int64_t rank = std::int64_t(shape.size() + axes.size());
  std::vector<bool> added(std::size_t(rank), false);
  for (auto a : axes) {
    const auto d = std::size_t(normalize_axis(ctx, a, rank));
    ctx.check(!added[d], "axis " + std::to_string(a) + " given twice");
    added[d] = true;
  }
  std::vector<std::int64_t> out;
  std::size_t next = 0;
  for (std::size_t d = 0; d < std::size_t(rank); ++d) out.push_back(added[d] ? 1 : shape[next++]);
  return one(reshaped(ctx, in[0], out));
}

}  // namespace

void add_shape_ops(OpTable& t) {
  t["Shape"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs data");
    auto shape = in[0].shape();
    const auto rank = std::int64_t(shape.size());
    std::int64_t start = ctx.node.i("start", 0), end = ctx.node.i("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<std::int64_t>(start, 0, rank);
    end = std::clamp<std::int64_t>(end, start, rank);
    std::vector<std::int64_t> dims(shape.begin() + start, shape.begin() + end);
    const auto n = std::int64_t(dims.size());
    return one(Value::of(HostTensor::of_ints(std::move(dims), {n})));
  };
  t["Size"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs data");
    return one(Value::of(HostTensor::of_ints({shape_numel(in[0].shape())}, {})));
  };
  t["Reshape"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs data");
    const auto target = ctx.opset < 5 || !ctx.has_input(in, 1) ? ctx.node.ints("shape") : ctx.ints(in[1]);
    return one(reshaped(ctx, in[0], reshape_target(ctx, in[0].shape(), target, ctx.node.i("allowzero", 0) != 0)));
  };
  t["Flatten"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs data");
    const auto shape = in[0].shape();
    std::int64_t axis = ctx.node.i("axis", 1);
    if (axis < 0) axis += std::int64_t(shape.size());
    ctx.check(axis >= 0 && axis <= std::int64_t(shape.size()), "axis out of range");
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t d = 0; d < std::int64_t(shape.size()); ++d) (d < axis ? outer : inner) *= shape[std::size_t(d)];
    return one(reshaped(ctx, in[0], {outer, inner}));
  };
  t["Transpose"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs data");
    const std::int64_t rank = in[0].rank();
    std::vector<std::int64_t> perm = ctx.node.ints("perm");
    if (perm.empty())
      for (std::int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
    ctx.check(std::int64_t(perm.size()) == rank, "perm of the wrong length");
    if (rank <= 1) return one(in[0]);
    Tensor x = ctx.tensor(in[0]);
    // A permutation that moves only dims of size 1 leaves the elements in their order: a
    // reshape, not a copy (PyTorch's batch-first attention exports swap batch 1 and the
    // sequence, twice per layer).
    std::vector<std::int64_t> shape(perm.size());
    std::int64_t last_moved = -1;
    bool in_order = true;
    std::vector<bool> seen(perm.size(), false);
    for (std::size_t i = 0; i < perm.size(); ++i) {
      ctx.check(perm[i] >= 0 && perm[i] < rank && !seen[std::size_t(perm[i])],
                "perm " + shape_str(perm) + " is not a permutation of the " + std::to_string(rank) + " dims");
      seen[std::size_t(perm[i])] = true;
      shape[i] = x.size(int(perm[i]));
      if (shape[i] == 1) continue;
      in_order = in_order && perm[i] > last_moved;
      last_moved = perm[i];
    }
    if (in_order) return one(Value::of(reshape(std::move(x), shape)));
    return one(Value::of(permute(std::move(x), perm)));
  };
  t["Squeeze"] = squeeze_op;
  t["Unsqueeze"] = unsqueeze_op;
  t["Concat"] = concat_op;
  t["Gather"] = gather_op;
  t["Slice"] = slice_op;
  t["Split"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs data");
    const auto shape = in[0].shape();
    const std::int64_t axis = normalize_axis(ctx, ctx.node.i("axis", 0), std::int64_t(shape.size()));
    const auto outputs = std::int64_t(ctx.node.outputs.size());
    std::vector<std::int64_t> sizes = ctx.opset < 13 ? ctx.node.ints("split") : axes_of(ctx, in, 1, "split");
    const std::int64_t dim = shape[std::size_t(axis)];
    if (sizes.empty()) {
      ctx.check(outputs > 0 && dim % outputs == 0,
                "dim " + std::to_string(dim) + " does not split into " + std::to_string(outputs));
      sizes.assign(std::size_t(outputs), dim / outputs);
    }
    ctx.check(
        std::int64_t(sizes.size()) == outputs && std::accumulate(sizes.begin(), sizes.end(), std::int64_t(0)) == dim,
        "split sizes do not sum to the dim " + std::to_string(dim));
    Values out;
    const Tensor x = ctx.tensor(in[0]);
    std::int64_t start = 0;
    for (auto s : sizes) {
      out.push_back(Value::of(slice(x, axis, start, start + s, 1)));
      start += s;
    }
    return out;
  };
  t["Expand"] = [](OpContext& ctx, const Values& in) {
    ctx.check(in.size() == 2, "needs input and shape");
    const auto target = ctx.ints(in[1]);
    const auto shape = broadcast_shapes(in[0].shape(), target);
    ctx.check(shape.has_value(), "cannot expand " + shape_str(in[0].shape()) + " to " + shape_str(target));
    Tensor x = ctx.tensor(in[0]);
    while (x.rank() < std::int64_t(shape->size())) x = unsqueeze(x, 0);
    return one(Value::of(expand(x, *shape)));
  };
  t["Tile"] = [](OpContext& ctx, const Values& in) {
    ctx.check(in.size() == 2, "needs input and repeats");
    const auto repeats = ctx.ints(in[1]);
    ctx.check(std::int64_t(repeats.size()) == in[0].rank(), "repeats must have one value per dim");
    return one(Value::of(repeat(ctx.tensor(in[0]), repeats)));
  };
  t["Trilu"] = [](OpContext& ctx, const Values& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs data");
    const std::int64_t k = ctx.has_input(in, 1) ? ctx.ints(in[1]).at(0) : 0;
    const Tensor x = ctx.tensor(in[0]);
    return one(Value::of(ctx.node.i("upper", 1) ? triu(x, k) : tril(x, k)));
  };
  t["GatherElements"] = [](OpContext& ctx, const Values& in) {
    ctx.check(in.size() == 2, "needs data and indices");
    const Tensor x = ctx.tensor(in[0]);
    const std::int64_t axis = normalize_axis(ctx, ctx.node.i("axis", 0), x.rank());
    Tensor idx = ctx.tensor(in[1]);
    idx = where(lt(idx, 0.0), idx + double(x.shape()[int(axis)]), idx);
    return one(Value::of(gather(x, axis, idx)));
  };
  const auto scatter_elements = [](OpContext& ctx, const Values& in) {
    ctx.check(in.size() == 3, "needs data, indices and updates");
    ctx.check(ctx.node.s("reduction", "none") == "none" || ctx.node.s("reduction", "none") == "add",
              "reduction '" + ctx.node.s("reduction", "") + "' is not supported");
    const Tensor x = ctx.tensor(in[0]);
    const std::int64_t axis = normalize_axis(ctx, ctx.node.i("axis", 0), x.rank());
    Tensor idx = ctx.tensor(in[1]);
    idx = where(lt(idx, 0.0), idx + double(x.shape()[int(axis)]), idx);
    if (ctx.node.s("reduction", "none") == "add") return one(Value::of(scatter_add(x, axis, idx, ctx.tensor(in[2]))));
    return one(Value::of(scatter(x, axis, idx, ctx.tensor(in[2]))));
  };
  t["ScatterElements"] = scatter_elements;
  t["Scatter"] = scatter_elements;
}

}  // namespace kiln::onnx::detail
