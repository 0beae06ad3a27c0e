// Less common ONNX ops, each a few of kiln's public ops: DepthToSpace, SpaceToDepth, EyeLike,
// GatherND, ScatterND, OneHot, NonZero, Hardmax, Shrink, LRN, MeanVarianceNormalization, Compress,
// ReverseSequence, Einsum, and the losses NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include <cctype>
#include <map>
#include <numeric>

#include "kiln/onnx/op_registry.h"

namespace kiln::onnx::detail {
namespace {

Tensor input(const OpContext& ctx, const Values& in, std::size_t k) {
  ctx.check(ctx.has_input(in, k), "input " + std::to_string(k) + " is missing");
  return ctx.tensor(in[k]);
}

Values depth_to_space(OpContext& ctx, const Values& in) {
  const Tensor x = input(ctx, in, 0);
  ctx.check(x.rank() == 4, "input must be 4-D, got " + x.shape().str());
  const std::int64_t b = ctx.node.i("blocksize", 0), n = x.shape()[0], c = x.shape()[1], h = x.shape()[2],
                     w = x.shape()[3];
  ctx.check(b > 0 && c % (b * b) == 0, "channels " + std::to_string(c) + " do not divide by blocksize^2");
  const std::int64_t oc = c / (b * b);
  Tensor t;
  if (ctx.node.s("mode", "DCR") == "DCR") {
    t = permute(reshape(x, {n, b, b, oc, h, w}), {0, 3, 4, 1, 5, 2});
  } else {
    t = permute(reshape(x, {n, oc, b, b, h, w}), {0, 1, 4, 2, 5, 3});
  }
  return one(reshape(t, {n, oc, h * b, w * b}));
}

Values space_to_depth(OpContext& ctx, const Values& in) {
  const Tensor x = input(ctx, in, 0);
  ctx.check(x.rank() == 4, "input must be 4-D, got " + x.shape().str());
  const std::int64_t b = ctx.node.i("blocksize", 0), n = x.shape()[0], c = x.shape()[1], h = x.shape()[2],
                     w = x.shape()[3];
  ctx.check(b > 0 && h % b == 0 && w % b == 0, "spatial dims do not divide by blocksize");
  const Tensor t = permute(reshape(x, {n, c, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
  return one(reshape(t, {n, c * b * b, h / b, w / b}));
}

// GatherND: each row of indices' last dim picks a slice of data, after batch_dims leading dims.
Values gather_nd(OpContext& ctx, const Values& in) {
  const Tensor data = input(ctx, in, 0);
  const HostTensor idx = ctx.host(in.at(1));
  const std::int64_t batch_dims = ctx.node.i("batch_dims", 0);
  const auto ds = data.shape().to_vector();
  ctx.check(!idx.shape.empty() && batch_dims >= 0 && batch_dims < std::int64_t(ds.size()), "bad indices or batch_dims");
  const std::int64_t k = idx.shape.back();
  ctx.check(k >= 1 && batch_dims + k <= std::int64_t(ds.size()), "index rows are longer than data's dims");
  std::int64_t batch = 1;
  for (std::int64_t d = 0; d < batch_dims; ++d) batch *= ds[std::size_t(d)];
  std::int64_t inner = 1;
  for (std::size_t d = std::size_t(batch_dims + k); d < ds.size(); ++d) inner *= ds[d];
  std::int64_t block = 1;  // elements of data per batch entry
  for (std::size_t d = std::size_t(batch_dims); d < ds.size(); ++d) block *= ds[d];
  const std::int64_t rows = std::int64_t(idx.ints.size()) / k, rows_per_batch = rows / batch;
  // Flat row numbers into data viewed as [batch * prod(indexed dims), inner].
  std::vector<std::int64_t> flat;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t offset = 0;
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t dim = ds[std::size_t(batch_dims + j)];
      std::int64_t i = idx.ints[std::size_t(r * k + j)];
      if (i < 0) i += dim;
      ctx.check(i >= 0 && i < dim, "index " + std::to_string(i) + " out of range for a dim of " + std::to_string(dim));
      offset = offset * dim + i;
    }
    flat.push_back((r / rows_per_batch) * (block / inner) + offset);
  }
  const Tensor table = reshape(data, {batch * (block / inner), inner});
  const auto count = std::int64_t(flat.size());
  Tensor picked = index_select(table, 0, from_vector(flat, {count}, ctx.device));
  std::vector<std::int64_t> out(idx.shape.begin(), idx.shape.end() - 1);
  out.insert(out.end(), ds.begin() + batch_dims + k, ds.end());
  return one(reshape(picked, out));
}

Values scatter_nd(OpContext& ctx, const Values& in) {
  const Tensor data = input(ctx, in, 0);
  const HostTensor idx = ctx.host(in.at(1));
  const Tensor updates = input(ctx, in, 2);
  const std::string reduction = ctx.node.s("reduction", "none");
  if (reduction != "none" && reduction != "add") ctx.unsupported("reduction " + reduction);
  const auto ds = data.shape().to_vector();
  ctx.check(!idx.shape.empty(), "indices must have a last dim");
  const std::int64_t k = idx.shape.back();
  ctx.check(k >= 1 && k <= std::int64_t(ds.size()), "index rows are longer than data's dims");
  std::int64_t inner = 1, outer = 1;
  for (std::size_t d = std::size_t(k); d < ds.size(); ++d) inner *= ds[d];
  for (std::int64_t d = 0; d < k; ++d) outer *= ds[std::size_t(d)];
  const std::int64_t rows = std::int64_t(idx.ints.size()) / k;
  // Each row's flat position, repeated over the slice it writes: index [rows, inner].
  std::vector<std::int64_t> positions;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t offset = 0;
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t dim = ds[std::size_t(j)];
      std::int64_t i = idx.ints[std::size_t(r * k + j)];
      if (i < 0) i += dim;
      ctx.check(i >= 0 && i < dim, "index out of range");
      offset = offset * dim + i;
    }
    for (std::int64_t e = 0; e < inner; ++e) positions.push_back(offset);
  }
  const Tensor table = reshape(data, {outer, inner});
  const Tensor index = from_vector(positions, {rows, inner}, ctx.device);
  const Tensor src = reshape(updates, {rows, inner});
  const Tensor out = reduction == "add" ? scatter_add(table, 0, index, src) : scatter(table, 0, index, src);
  return one(reshape(out, ds));
}

Values one_hot_op(OpContext& ctx, const Values& in) {
  Tensor indices = input(ctx, in, 0);
  const std::int64_t depth = std::int64_t(ctx.doubles(in.at(1)).at(0));
  const Tensor values = input(ctx, in, 2);
  ctx.check(depth > 0, "depth must be positive");
  if (is_floating(indices.dtype())) indices = cast(indices, DType::i64);
  indices = where(lt(indices, 0.0), indices + double(depth), indices);
  // Out-of-range indices give all-off rows: compare against every class instead of one_hot.
  const Tensor classes = arange(0.0, double(depth), 1.0, {DType::i64, ctx.device});
  const Tensor hot = eq(unsqueeze(indices, -1), classes);  // [..., depth]
  const Tensor off = slice(values, 0, 0, 1), on = slice(values, 0, 1, 2);
  Tensor y = where(hot, on, off);
  const std::int64_t rank = y.rank();
  std::int64_t axis = ctx.node.i("axis", -1);
  if (axis < 0) axis += rank;
  ctx.check(axis >= 0 && axis < rank, "axis out of range");
  if (axis != rank - 1) {
    std::vector<std::int64_t> perm;
    for (std::int64_t d = 0; d < rank - 1; ++d) {
      if (d == axis) perm.push_back(rank - 1);
      perm.push_back(d);
    }
    if (axis == rank - 1) perm.push_back(rank - 1);
    y = permute(y, perm);
  }
  return one(y);
}

// NonZero's output size depends on the values: they are read back (a wait).
Values non_zero(OpContext& ctx, const Values& in) {
  const HostTensor x = ctx.host(in.at(0));
  const auto rank = std::int64_t(x.shape.size());
  std::vector<std::int64_t> hits;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x.at(i) != 0) hits.push_back(std::int64_t(i));
  const auto n = std::int64_t(hits.size());
  const std::int64_t rows = std::max<std::int64_t>(rank, 1);
  std::vector<std::int64_t> out(std::size_t(rows * n));
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t rest = hits[std::size_t(j)];
    for (std::int64_t d = rank - 1; d >= 0; --d) {
      out[std::size_t(d * n + j)] = rest % x.shape[std::size_t(d)];
      rest /= x.shape[std::size_t(d)];
    }
  }
  return Values{Value::of(HostTensor::of_ints(std::move(out), {rank, n}))};
}

Values hardmax(OpContext& ctx, const Values& in) {
  const Tensor x = input(ctx, in, 0);
  const std::int64_t axis = normalize_axis(ctx, ctx.node.i("axis", ctx.opset < 13 ? 1 : -1), x.rank());
  if (ctx.opset < 13) {
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t d = 0; d < x.rank(); ++d) (d < axis ? outer : inner) *= x.shape()[int(d)];
    const Tensor flat = reshape(x, {outer, inner});
    const Tensor hot = eq(unsqueeze(argmax(flat, 1), 1), arange(0.0, double(inner), 1.0, {DType::i64, ctx.device}));
    return one(reshape(cast(hot, x.dtype()), x.shape().to_vector()));
  }
  const std::int64_t n = x.shape()[int(axis)];
  std::vector<std::int64_t> shape(std::size_t(x.rank()), 1);
  shape[std::size_t(axis)] = n;
  const Tensor classes = reshape(arange(0.0, double(n), 1.0, {DType::i64, ctx.device}), shape);
  return one(cast(eq(argmax(x, axis, true), classes), x.dtype()));
}

Values lrn(OpContext& ctx, const Values& in) {
  const Tensor x = input(ctx, in, 0);
  ctx.check(x.rank() >= 3, "input must have channels and a spatial dim");
  const std::int64_t size = ctx.node.i("size", 0);
  ctx.check(size > 0, "size must be positive");
  const double alpha = ctx.node.f("alpha", 1e-4f), beta = ctx.node.f("beta", 0.75f), bias = ctx.node.f("bias", 1.0f);
  const std::int64_t c = x.shape()[1], before = (size - 1) / 2, after = size - 1 - before;
  // The sum of squares over a window of channels: pad the channel dim, sum shifted slices.
  std::vector<std::int64_t> pads;
  for (std::int64_t d = x.rank() - 1; d >= 2; --d) {
    pads.push_back(0);
    pads.push_back(0);
  }
  pads.push_back(before);
  pads.push_back(after);
  const Tensor sq = pad(square(x), pads, 0.0);
  Tensor window = slice(sq, 1, 0, c, 1);
  for (std::int64_t k = 1; k < size; ++k) window = window + slice(sq, 1, k, k + c, 1);
  return one(x / pow(window * (alpha / double(size)) + bias, beta));
}

Values mvn(OpContext& ctx, const Values& in) {
  const Tensor x = input(ctx, in, 0);
  std::vector<std::int64_t> axes = ctx.node.ints("axes", {0, 2, 3});
  for (auto& a : axes) a = normalize_axis(ctx, a, x.rank());
  const Tensor m = mean(x, axes, true);
  const Tensor centered = x - m;
  return one(centered / (sqrt(mean(square(centered), axes, true)) + 1e-9));
}

// -input[n, target[n, ...], ...] * weight[target], with ignore_index and the reduction.
Tensor nll(const OpContext& ctx, const Tensor& logp, Tensor target, const Tensor& weight) {
  ctx.check(logp.rank() >= 2 && target.rank() == logp.rank() - 1,
            "input " + logp.shape().str() + " and target " + target.shape().str() + " do not fit");
  const std::int64_t c = logp.shape()[1];
  Tensor valid = full(target.shape(), 1.0, {logp.dtype(), ctx.device});
  if (ctx.node.has("ignore_index")) {
    const double ignore = double(ctx.node.i("ignore_index", 0));
    valid = cast(ne(target, ignore), logp.dtype());
    target = where(eq(target, ignore), 0.0, target);
  }
  target = clamp(target, 0.0, double(c - 1));
  Tensor picked = squeeze(gather(logp, 1, unsqueeze(target, 1)), 1);
  Tensor w = valid;
  if (weight.defined())
    w = valid * reshape(index_select(weight, 0, reshape(target, {target.numel()})), target.shape().to_vector());
  const Tensor loss = -(picked * w);
  const std::string reduction = ctx.node.s("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss);
  ctx.check(reduction == "mean", "reduction '" + reduction + "' is not none, sum or mean");
  return sum(loss) / sum(w);
}

Values nll_loss(OpContext& ctx, const Values& in) {
  const Tensor weight = ctx.has_input(in, 2) ? ctx.tensor(in[2]) : Tensor{};
  return one(nll(ctx, input(ctx, in, 0), input(ctx, in, 1), weight));
}

Values softmax_cross_entropy(OpContext& ctx, const Values& in) {
  const Tensor logp = log_softmax(input(ctx, in, 0), 1);
  const Tensor weight = ctx.has_input(in, 2) ? ctx.tensor(in[2]) : Tensor{};
  return Values{Value::of(nll(ctx, logp, input(ctx, in, 1), weight)), Value::of(logp)};
}

// Compress: the slices along axis (or of the flattened input) where condition is true; the
// condition is read on the host (the output's size depends on it).
Values compress(OpContext& ctx, const Values& in) {
  Tensor x = input(ctx, in, 0);
  const HostTensor cond = ctx.host(in.at(1));
  std::int64_t axis = 0;
  if (ctx.node.has("axis")) {
    axis = normalize_axis(ctx, ctx.node.i("axis", 0), x.rank());
  } else {
    x = reshape(x, {x.numel()});
  }
  const std::int64_t n = x.shape()[int(axis)];
  std::vector<std::int64_t> keep;
  for (std::int64_t i = 0; i < n && i < std::int64_t(cond.size()); ++i)
    if (cond.at(std::size_t(i)) != 0) keep.push_back(i);
  const auto count = std::int64_t(keep.size());
  if (count == 0) return one(slice(x, axis, 0, 0, 1));
  return one(index_select(x, axis, from_vector(keep, {count}, ctx.device)));
}

// ReverseSequence: reverses the first sequence_lens[b] steps of each batch entry.
Values reverse_sequence(OpContext& ctx, const Values& in) {
  const Tensor x = input(ctx, in, 0);
  const auto lens = ctx.ints(in.at(1));
  const std::int64_t time_axis = ctx.node.i("time_axis", 0), batch_axis = ctx.node.i("batch_axis", 1);
  ctx.check(x.rank() >= 2 && (time_axis == 0 || time_axis == 1) && batch_axis == 1 - time_axis,
            "time_axis and batch_axis must be 0 and 1");
  const std::int64_t steps = x.shape()[int(time_axis)], batch = x.shape()[int(batch_axis)];
  ctx.check(std::int64_t(lens.size()) == batch, "sequence_lens needs one length per batch entry");
  // The source step of every (time, batch) position, in x's order of those two dims.
  std::vector<std::int64_t> src;
  for (std::int64_t a = 0; a < x.shape()[0]; ++a) {
    for (std::int64_t b = 0; b < x.shape()[1]; ++b) {
      const std::int64_t t = time_axis == 0 ? a : b, k = time_axis == 0 ? b : a;
      ctx.check(lens[std::size_t(k)] >= 0 && lens[std::size_t(k)] <= steps, "a sequence length is out of range");
      src.push_back(t < lens[std::size_t(k)] ? lens[std::size_t(k)] - 1 - t : t);
    }
  }
  std::vector<std::int64_t> idx_shape{x.shape()[0], x.shape()[1]};
  for (std::int64_t d = 2; d < x.rank(); ++d) idx_shape.push_back(1);
  Tensor index = reshape(from_vector(src, {x.shape()[0], x.shape()[1]}, ctx.device), idx_shape);
  index = expand(index, x.shape().to_vector());
  return one(gather(x, time_axis, index));
}

// Einsum without ellipses or repeated letters in one operand: every operand laid out over all
// the equation's letters, multiplied with broadcasting, summed over the letters the output lacks.
Values einsum(OpContext& ctx, const Values& in) {
  std::string eq;
  for (char ch : ctx.node.s("equation", ""))
    if (ch != ' ') eq += ch;
  if (eq.find("...") != std::string::npos) ctx.unsupported("Einsum with an ellipsis");
  const auto arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string lhs = eq.substr(0, arrow), out;
  for (std::size_t start = 0;;) {
    const auto comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  ctx.check(terms.size() == in.size(), "the equation names " + std::to_string(terms.size()) + " operands");
  std::string letters;
  std::map<char, int> uses;
  for (const auto& term : terms) {
    for (char ch : term) {
      ctx.check(std::isalpha(static_cast<unsigned char>(ch)), "bad equation '" + eq + "'");
      if (term.find(ch) != term.rfind(ch)) ctx.unsupported("Einsum with a repeated letter in one operand");
      if (letters.find(ch) == std::string::npos) letters += ch;
      ++uses[ch];
    }
  }
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    for (const auto& [ch, n] : uses)
      if (n == 1) out += ch;
  }
  Tensor product;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    Tensor x = ctx.tensor(in[k]);
    ctx.check(x.rank() == std::int64_t(terms[k].size()), "operand " + std::to_string(k) + " " + x.shape().str() +
                                                             " does not have " + std::to_string(terms[k].size()) +
                                                             " dims");
    std::vector<std::int64_t> perm, shape;
    for (char ch : letters) {
      const auto pos = terms[k].find(ch);
      if (pos != std::string::npos) perm.push_back(std::int64_t(pos));
    }
    if (x.rank() > 1) x = permute(x, perm);
    std::size_t next = 0;
    for (char ch : letters) shape.push_back(terms[k].find(ch) != std::string::npos ? x.shape()[int(next++)] : 1);
    x = reshape(x, shape);
    product = product.defined() ? product * x : x;
  }
  std::vector<std::int64_t> summed;
  std::string kept;
  for (std::size_t d = 0; d < letters.size(); ++d) {
    if (out.find(letters[d]) == std::string::npos)
      summed.push_back(std::int64_t(d));
    else
      kept += letters[d];
  }
  if (!summed.empty()) product = sum(product, summed);
  std::vector<std::int64_t> perm;
  for (char ch : out) {
    const auto pos = kept.find(ch);
    ctx.check(pos != std::string::npos, "output letter '" + std::string(1, ch) + "' is on no operand");
    perm.push_back(std::int64_t(pos));
  }
  if (perm.size() > 1) product = permute(product, perm);
  return one(product);
}

}  // namespace

void add_extra_ops(OpTable& t) {
  t["Compress"] = compress;
  t["ReverseSequence"] = reverse_sequence;
  t["Einsum"] = einsum;
  t["DepthToSpace"] = depth_to_space;
  t["SpaceToDepth"] = space_to_depth;
  t["GatherND"] = gather_nd;
  t["ScatterND"] = scatter_nd;
  t["OneHot"] = one_hot_op;
  t["NonZero"] = non_zero;
  t["Hardmax"] = hardmax;
  t["LRN"] = lrn;
  t["MeanVarianceNormalization"] = mvn;
  t["NegativeLogLikelihoodLoss"] = nll_loss;
  t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy;
  t["EyeLike"] = [](OpContext& ctx, const Values& in) {
    const Tensor x = input(ctx, in, 0);
    ctx.check(x.rank() == 2, "input must be 2-D");
    const std::int64_t k = ctx.node.i("k", 0), rows = x.shape()[0], cols = x.shape()[1];
    const DType dtype = ctx.node.has("dtype")
                            ? (ctx.node.i("dtype", 1) == 7 || ctx.node.i("dtype", 1) == 6 ? DType::i64 : DType::f32)
                            : x.dtype();
    const Tensor r = unsqueeze(arange(0.0, double(rows), 1.0, {DType::i64, ctx.device}), 1);
    const Tensor c = unsqueeze(arange(0.0, double(cols), 1.0, {DType::i64, ctx.device}), 0);
    return one(cast(eq(c - r, double(k)), dtype));
  };
  t["Shrink"] = [](OpContext& ctx, const Values& in) {
    const Tensor x = input(ctx, in, 0);
    const double lambd = ctx.node.f("lambd", 0.5f), bias = ctx.node.f("bias", 0.0f);
    const Tensor xf = is_floating(x.dtype()) ? x : cast(x, DType::f32);
    Tensor y = where(lt(xf, -lambd), xf + bias, where(gt(xf, lambd), xf - bias, 0.0));
    return one(is_floating(x.dtype()) ? y : cast(y, x.dtype()));
  };
}

}  // namespace kiln::onnx::detail
