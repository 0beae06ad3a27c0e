// Backward rules of the layout family. Every layout op only moves, copies or drops elements, so
// each gradient is the gradient of the output moved back: a reshape, the inverse permutation, a
// sum over what expand or repeat duplicated, zeros where slice or pad dropped an element. None
// of them needs the forward's values; they read only the shapes and attributes of the record.
#include "kiln/autograd/rules.h"
#include "kiln/ops/attrs_layout.h"

namespace kiln::autograd {

namespace {

// Layout ops also move integer and bool tensors, which take no gradient.
bool takes_gradient(const TensorIr& meta) { return is_floating(meta.dtype); }

// The common shape of a one-input rule: no gradient for an integer input or a missing seed.
template <Tensor (*Backward)(const ForwardRecord&, Tensor)>
std::vector<Tensor> unary(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  if (!grads_out[0].defined() || !takes_gradient(fwd.input_meta[0])) return {Tensor{}};
  return {Backward(fwd, grads_out[0])};
}

Tensor reshape_backward(const ForwardRecord& fwd, Tensor g) {
  return reshape(std::move(g), fwd.input_meta[0].shape.to_vector());
}

Tensor permute_backward(const ForwardRecord& fwd, Tensor g) {
  const auto& perm = fwd.attrs.ints;
  std::vector<std::int64_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return permute(std::move(g), inverse);
}

Tensor expand_backward(const ForwardRecord& fwd, Tensor g) { return sum_to(std::move(g), fwd.input_meta[0].shape); }

// Spreads the m entries along `dim` to every step-th place of m * step, zeros in between:
// [outer, m, inner] -> [outer, m, 1, inner] -> pad -> [outer, m, step, inner]. Working on that
// rank-4 form keeps any input rank within kMaxRank.
Tensor interleave_zeros(Tensor g, int dim, std::int64_t step) {
  Shape s = g.shape();
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= s[d];
  for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  Tensor spread = pad(reshape(std::move(g), {outer, s[dim], 1, inner}), {0, 0, 0, step - 1});
  s[dim] *= step;
  return reshape(std::move(spread), s.to_vector());
}

// Each kept element goes back to start + j * step; the rest of the input gets zeros. Steps
// become zeros in between, then one pad puts every dim's start back (cropping, with a negative
// pad, the zeros that the last step added beyond the input).
Tensor slice_backward(const ForwardRecord& fwd, Tensor g) {
  const Shape& in = fwd.input_meta[0].shape;
  const SliceAttrs s = SliceAttrs::decode(fwd.kind, fwd.attrs);
  const auto start = [&](int d) { return s.dims[static_cast<std::size_t>(d)].start; };
  const auto step_of = [&](int d) { return s.dims[static_cast<std::size_t>(d)].step; };
  for (int d = 0; d < in.rank(); ++d) {
    const std::int64_t step = step_of(d);
    if (step > 1 && g.shape()[d] > 0) g = interleave_zeros(std::move(g), d, step);
  }
  std::vector<std::int64_t> pads;
  bool any = false;
  for (int d = in.rank() - 1; d >= 0; --d) {
    const std::int64_t before = start(d), after = in[d] - before - g.shape()[d];
    pads.insert(pads.end(), {before, after});
    any = any || before != 0 || after != 0;
  }
  return any ? pad(std::move(g), pads, 0.0) : g;
}

Tensor flip_backward(const ForwardRecord& fwd, Tensor g) { return flip(std::move(g), fwd.attrs.ints); }

// Output dim i holds reps[i] copies of input dim i (leading dims of size 1 when repeats has more
// entries than the input has dims): split it into [reps[i], size[i]] and sum the copies. When
// splitting every dim at once would pass kMaxRank, one dim at a time.
Tensor repeat_backward(const ForwardRecord& fwd, Tensor g) {
  const Shape& in = fwd.input_meta[0].shape;
  const auto& reps = fwd.attrs.ints;
  const int n = static_cast<int>(reps.size()), lead = n - in.rank();
  const auto size = [&](int i) { return i < lead ? std::int64_t{1} : in[i - lead]; };

  std::vector<std::int64_t> split;
  Dims summed;
  for (int i = 0; i < n; ++i) {
    if (reps[i] != 1) {
      summed.push_back(static_cast<std::int64_t>(split.size()));
      split.push_back(reps[i]);
    }
    split.push_back(size(i));
  }
  if (static_cast<int>(split.size()) <= kMaxRank) {
    Tensor s = reshape(std::move(g), split);
    if (!summed.empty()) s = sum(std::move(s), summed);
    return reshape(std::move(s), in.to_vector());
  }
  Shape cur = g.shape();
  for (int i = 0; i < n; ++i) {
    if (reps[i] == 1) continue;
    std::int64_t outer = 1, inner = 1;
    for (int d = 0; d < i; ++d) outer *= cur[d];
    for (int d = i + 1; d < n; ++d) inner *= cur[d];
    g = sum(reshape(std::move(g), {outer, reps[i], size(i), inner}), {1});
    cur[i] = size(i);
    g = reshape(std::move(g), cur.to_vector());
  }
  return reshape(std::move(g), in.to_vector());
}

// A pad of p before a dim is a crop of p in the gradient, and a crop (negative pad) is a pad of
// zeros: the gradient is padded by the negated amounts.
Tensor pad_backward(const ForwardRecord& fwd, Tensor g) {
  std::vector<std::int64_t> pads = PadAttrs::decode(fwd.kind, fwd.attrs).pairs();
  for (auto& p : pads) p = -p;
  return pad(std::move(g), pads, 0.0);
}

Tensor tril_backward(const ForwardRecord& fwd, Tensor g) { return tril(std::move(g), fwd.attrs.dim); }
Tensor triu_backward(const ForwardRecord& fwd, Tensor g) { return triu(std::move(g), fwd.attrs.dim); }

// cat skips 1-D empty inputs (like torch); they get an empty gradient. The others get their
// part of the gradient along the cat dim, in order.
std::vector<Tensor> cat_backward(const ForwardRecord& fwd, const std::vector<Tensor>& grads_out) {
  const auto& metas = fwd.input_meta;
  std::vector<Tensor> grads(metas.size());
  const Tensor& g = grads_out[0];
  if (!g.defined() || !takes_gradient(metas[0])) return grads;
  const auto skipped = [](const TensorIr& t) { return t.shape.rank() == 1 && t.shape[0] == 0; };
  int dim = 0;
  for (const TensorIr& t : metas)
    if (!skipped(t)) {
      dim = normalize_dim("cat", fwd.attrs.dim, t.shape.rank());
      break;
    }
  std::int64_t at = 0;
  for (std::size_t i = 0; i < metas.size(); ++i) {
    if (skipped(metas[i])) {
      grads[i] = zeros(Shape{0}, TensorOptions{metas[i].dtype, g.device()});
      continue;
    }
    const std::int64_t n = metas[i].shape[dim];
    grads[i] = slice(g, dim, at, at + n);
    at += n;
  }
  return grads;
}

}  // namespace

void register_layout_rules(RuleTable& t) {
  // None of them saves a tensor: shapes and attributes are in every record.
  t.set(OpKind::reshape, BackwardRule{unary<reshape_backward>, false, false});
  t.set(OpKind::permute, BackwardRule{unary<permute_backward>, false, false});
  t.set(OpKind::expand, BackwardRule{unary<expand_backward>, false, false});
  t.set(OpKind::slice, BackwardRule{unary<slice_backward>, false, false});
  t.set(OpKind::cat, BackwardRule{cat_backward, false, false});
  t.set(OpKind::flip, BackwardRule{unary<flip_backward>, false, false});
  t.set(OpKind::repeat, BackwardRule{unary<repeat_backward>, false, false});
  t.set(OpKind::pad, BackwardRule{unary<pad_backward>, false, false});
  t.set(OpKind::tril, BackwardRule{unary<tril_backward>, false, false});
  t.set(OpKind::triu, BackwardRule{unary<triu_backward>, false, false});
}

}  // namespace kiln::autograd
