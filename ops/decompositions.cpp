// The decomposition rules (ops/decompositions.h). Each builds its messages with Rewrite, which
// shapes the intermediates by the ops' own shape rules and hands every entity that ends inside
// the rewrite over to its last reader.
#include "kiln/ops/decompositions.h"

#include <algorithm>
#include <initializer_list>
#include <limits>

#include "kiln/ops/attrs_creation.h"
#include "kiln/ops/attrs_layout.h"
#include "kiln/ops/attrs_linalg.h"
#include "kiln/ops/attrs_window.h"
#include "kiln/ops/registry.h"

namespace kiln {

// A named namespace rather than an anonymous one: a unity build puts this file beside others
// of kiln_core that have their own `product` or `conv`.
namespace decompositions {

using Ints = std::vector<std::int64_t>;

class Rewrite {
 public:
  Rewrite(const OpIr& op, EntityId& next_id, std::vector<OpIr>& out)
      : op_(op), next_id_(next_id), out_(out), first_(out.size()) {}

  // An intermediate message: `kind` on `inputs`; returns its output, a new entity.
  TensorIr emit(OpKind kind, std::initializer_list<TensorIr> inputs, OpAttrs attrs = {}) {
    OpIr& m = message(kind, inputs, std::move(attrs));
    infer_outputs(m, m.outputs);
    m.outputs[0].id = next_id_++;
    return m.outputs[0];
  }
  TensorIr reshape(const TensorIr& t, Ints shape) {
    OpAttrs a;
    a.ints = std::move(shape);
    return emit(OpKind::reshape, {t}, std::move(a));
  }
  // A message that writes the op's own output k (of an op with several, such as batch_norm's
  // statistics); returns it, for later messages to read.
  TensorIr output(std::size_t k, OpKind kind, std::initializer_list<TensorIr> inputs, OpAttrs attrs = {}) {
    message(kind, inputs, std::move(attrs)).outputs.push_back(op_.outputs[k]);
    written_ |= 1u << k;
    return op_.outputs[k];
  }
  // The last message, which writes the op's own outputs (those no output() call wrote).
  void finish(OpKind kind, std::initializer_list<TensorIr> inputs, OpAttrs attrs = {}) {
    OpIr& m = message(kind, inputs, std::move(attrs));
    for (std::size_t k = 0; k < op_.outputs.size(); ++k)
      if (!(written_ >> k & 1u)) m.outputs.push_back(op_.outputs[k]);
    hand_over();
  }
  // After output() wrote every output of the op (no finish()): hands over what ends inside.
  void done() { hand_over(); }

 private:
  OpIr& message(OpKind kind, std::initializer_list<TensorIr> inputs, OpAttrs attrs) {
    OpIr m;
    m.kind = kind;
    m.seq = op_.seq;  // in the stream, every message of the rewrite stands where the op stood
    m.lane = op_.lane;
    m.attrs = std::move(attrs);
    for (TensorIr t : inputs) {
      t.status = TensorStatus::ReadOnly;
      m.inputs.push_back(t);
    }
    out_.push_back(std::move(m));
    return out_.back();
  }

  // The intermediates and the inputs the op was handed end inside the rewrite: each is handed
  // over by the last message that reads it (one occurrence: an in-place output takes one
  // buffer), and an intermediate nobody reads is dropped.
  void hand_over() {
    std::vector<EntityId> ending;
    for (const TensorIr& t : op_.inputs)
      if (t.status == TensorStatus::ReadWrite) ending.push_back(t.id);
    for (std::size_t i = first_; i < out_.size(); ++i)
      for (const TensorIr& t : out_[i].outputs)
        if (!is_op_output(t.id)) ending.push_back(t.id);
    for (EntityId id : ending) {
      if (hand_over_last_read(id)) continue;
      OpIr drop;
      drop.kind = OpKind::drop;
      drop.seq = op_.seq;
      drop.lane = op_.lane;
      drop.inputs.push_back(TensorIr{id, Shape{}, DType::f32, TensorStatus::ReadWrite});
      out_.push_back(std::move(drop));
    }
  }
  bool is_op_output(EntityId id) const {
    for (const TensorIr& t : op_.outputs)
      if (t.id == id) return true;
    return false;
  }
  bool hand_over_last_read(EntityId id) {
    for (std::size_t i = out_.size(); i-- > first_;)
      for (std::size_t j = out_[i].inputs.size(); j-- > 0;)
        if (out_[i].inputs[j].id == id) {
          out_[i].inputs[j].status = TensorStatus::ReadWrite;
          return true;
        }
    return false;
  }

  const OpIr& op_;
  EntityId& next_id_;
  std::vector<OpIr>& out_;
  std::size_t first_;
  std::uint32_t written_ = 0;  // the op's outputs that output() wrote
};

std::int64_t product(const Ints& v) {
  std::int64_t p = 1;
  for (std::int64_t x : v) p *= x;
  return p;
}

Ints tail(const Shape& s, int from) { return Ints(s.begin() + from, s.end()); }

OpAttrs matmul_attrs(bool transpose_a, bool transpose_b) {
  return MatmulAttrs{.transpose_a = transpose_a, .transpose_b = transpose_b}.encode();
}

// A conv op's attrs (ops/attrs_window.h) and the unfold / fold attrs of the same window.
struct ConvWindow {
  ConvAttrs c;
  Ints sizes;  // the gradients' sizes[s]
  std::int64_t groups = 1;

  explicit ConvWindow(const OpIr& op) : c(ConvAttrs::decode(op)), groups(c.groups) {
    if (ConvAttrs::has_sizes(op.kind)) sizes.assign(c.sizes.begin(), c.sizes.begin() + c.dims);
  }
  // unfold's attrs, or fold's with the image size.
  OpAttrs window(const Ints& kernel, const Ints* image = nullptr) const {
    WindowAttrs w = c.window(kernel.data());
    if (!image) return w.encode(OpKind::unfold);
    std::copy(image->begin(), image->end(), w.output_size.begin());
    return w.encode(OpKind::fold);
  }
  // A kernel of one element moved by one, unpadded: every window is one input position, in order,
  // so the columns are the input itself.
  bool pointwise(const Ints& kernel) const {
    for (int d = 0; d < c.dims; ++d) {
      const auto i = static_cast<std::size_t>(d);
      if (kernel[i] != 1 || c.stride[i] != 1 || c.padding[i] != 0) return false;
    }
    return true;
  }
};

// x [N, C, *in] as columns [N, C * kk, L]: row c * kk + j is channel c at kernel offset j, the
// order of a weight [K, C, *kernel] flattened.
TensorIr columns(Rewrite& r, const ConvWindow& c, const TensorIr& x, const Ints& kernel, std::int64_t windows) {
  if (c.pointwise(kernel)) return r.reshape(x, {x.shape[0], x.shape[1], windows});
  return r.emit(OpKind::unfold, {x}, c.window(kernel));
}

// x Wᵀ as x W after a copy of W transposed (each transposed operand its own permute).
void matmul_transposed(const OpIr& op, Rewrite& r) {
  const MatmulAttrs t = MatmulAttrs::decode(op);
  TensorIr operands[2] = {op.inputs[0], op.inputs[1]};
  for (int i = 0; i < 2; ++i) {
    if (!(i == 0 ? t.transpose_a : t.transpose_b)) continue;
    const int rank = operands[i].shape.rank();
    OpAttrs perm;
    for (int d = 0; d < rank; ++d) perm.ints.push_back(d);
    std::swap(perm.ints[rank - 1], perm.ints[rank - 2]);
    operands[i] = r.emit(OpKind::permute, {operands[i]}, std::move(perm));
  }
  r.finish(OpKind::matmul, {operands[0], operands[1]});
}

// conv: W [K, C/G * kk] @ columns [N, C/G * kk, L] (per group: [G, K/G, C/G * kk] @
// [N, G, C/G * kk, L]), the bias added to the [N, K, L] product (where it can be the matmul's
// epilogue), reshaped to [N, K, *out].
void conv(const OpIr& op, Rewrite& r) {
  const ConvWindow c(op);
  const TensorIr &x = op.inputs[0], &w = op.inputs[1];
  const std::int64_t n = x.shape[0], channels = x.shape[1], k = w.shape[0], g = c.groups;
  const Ints kernel = tail(w.shape, 2), out = tail(op.outputs[0].shape, 2);
  const std::int64_t ckk = channels / g * product(kernel), windows = product(out);
  const TensorIr cols = columns(r, c, x, kernel, windows);
  TensorIr y;
  if (g == 1) {
    const TensorIr w2 = r.reshape(w, {k, ckk});
    y = r.emit(OpKind::matmul, {w2, cols});
  } else {
    const TensorIr w3 = r.reshape(w, {g, k / g, ckk});
    const TensorIr cols4 = r.reshape(cols, {n, g, ckk, windows});
    y = r.reshape(r.emit(OpKind::matmul, {w3, cols4}), {n, k, windows});
  }
  if (op.inputs.size() == 3) y = r.emit(OpKind::add, {y, r.reshape(op.inputs[2], {k, 1})});
  Ints shape = {n, k};
  shape.insert(shape.end(), out.begin(), out.end());
  OpAttrs a;
  a.ints = std::move(shape);
  r.finish(OpKind::reshape, {y}, std::move(a));
}

// conv_input_grad (the adjoint of unfold + matmul): columns = Wᵀ dy per group, folded back
// into the image: [K, C/G * kk]ᵀ @ [N, K, L] (per group [G, K/G, C/G * kk]ᵀ @ [N, G, K/G, L]).
void conv_input_grad(const OpIr& op, Rewrite& r) {
  const ConvWindow c(op);
  const TensorIr &dy = op.inputs[0], &w = op.inputs[1];
  const std::int64_t n = dy.shape[0], k = dy.shape[1], cg = w.shape[1], g = c.groups;
  const Ints kernel = tail(w.shape, 2);
  const std::int64_t ckk = cg * product(kernel), windows = product(tail(dy.shape, 2));
  TensorIr cols;
  if (g == 1) {
    const TensorIr w2 = r.reshape(w, {k, ckk});
    const TensorIr dy3 = r.reshape(dy, {n, k, windows});
    cols = r.emit(OpKind::matmul, {w2, dy3}, matmul_attrs(true, false));
  } else {
    const TensorIr w3 = r.reshape(w, {g, k / g, ckk});
    const TensorIr dy4 = r.reshape(dy, {n, g, k / g, windows});
    cols = r.reshape(r.emit(OpKind::matmul, {w3, dy4}, matmul_attrs(true, false)), {n, g * ckk, windows});
  }
  r.finish(OpKind::fold, {cols}, c.window(kernel, &c.sizes));
}

// conv_weight_grad: dW = sum over the batch of dy columnsᵀ: [N, K, L] @ [N, C * kk, L]ᵀ (per
// group [N, G, K/G, L] @ [N, G, C/G * kk, L]ᵀ), summed over N, reshaped to [K, C/G, *kernel].
void conv_weight_grad(const OpIr& op, Rewrite& r) {
  const ConvWindow c(op);
  const TensorIr &dy = op.inputs[0], &x = op.inputs[1];
  const std::int64_t n = dy.shape[0], k = dy.shape[1], g = c.groups, cg = x.shape[1] / g;
  const Ints& kernel = c.sizes;
  const std::int64_t ckk = cg * product(kernel), windows = product(tail(dy.shape, 2));
  const TensorIr cols = columns(r, c, x, kernel, windows);
  TensorIr per_sample;
  if (g == 1) {
    const TensorIr dy3 = r.reshape(dy, {n, k, windows});
    per_sample = r.emit(OpKind::matmul, {dy3, cols}, matmul_attrs(false, true));
  } else {
    const TensorIr dy4 = r.reshape(dy, {n, g, k / g, windows});
    const TensorIr cols4 = r.reshape(cols, {n, g, ckk, windows});
    per_sample = r.emit(OpKind::matmul, {dy4, cols4}, matmul_attrs(false, true));
  }
  OpAttrs over_batch;
  over_batch.ints = {0};
  const TensorIr summed = r.emit(OpKind::sum, {per_sample}, std::move(over_batch));
  Ints shape = {k, cg};
  shape.insert(shape.end(), kernel.begin(), kernel.end());
  OpAttrs a;
  a.ints = std::move(shape);
  r.finish(OpKind::reshape, {summed}, std::move(a));
}

// ---- pooling ----

OpAttrs dims_attrs(Ints dims, bool keepdim = false) {
  OpAttrs a;
  a.ints = std::move(dims);
  a.keepdim = keepdim;
  return a;
}
OpAttrs dim_attrs(std::int64_t dim) {
  OpAttrs a;
  a.dim = dim;
  a.flag = true;  // argmax along `dim`, not over all dims
  return a;
}
OpAttrs scalar_attrs(double value, ScalarSide side) {
  OpAttrs a;
  a.scalar = value;
  a.scalar_side = side;
  return a;
}

// A pooling op's window as unfold sees it. ceil_mode's last window may hang past the padded
// input's end (`overhang`): unfold pads symmetrically, so a pad op adds that much first.
struct PoolWindow {
  PoolAttrs a;
  Ints in, out, overhang;
  std::int64_t kk = 1, windows = 1;

  // in: the image's spatial sizes, out: the windows'.
  PoolWindow(const OpIr& op, Ints image, Ints pooled)
      : a(PoolAttrs::decode(op)), in(std::move(image)), out(std::move(pooled)) {
    for (int d = 0; d < a.dims; ++d) {
      const auto i = static_cast<std::size_t>(d);
      const std::int64_t span = a.dilation[i] * (a.kernel[i] - 1) + 1;
      overhang.push_back(std::max<std::int64_t>(0, (out[i] - 1) * a.stride[i] + span - (in[i] + 2 * a.padding[i])));
      kk *= a.kernel[i];
      windows *= out[i];
    }
  }
  bool overhangs() const {
    for (std::int64_t v : overhang)
      if (v > 0) return true;
    return false;
  }
  // unfold's attrs: this window, padded by `padding` (the pool's, or none) with `value`.
  OpAttrs unfold(bool padded, double value) const {
    WindowAttrs w;
    w.dims = a.dims;
    w.kernel = a.kernel;
    w.dilation = a.dilation;
    w.stride = a.stride;
    if (padded) w.padding = a.padding;
    w.pad_value = value;
    return w.encode(OpKind::unfold);
  }
  // [n, c, *size] with the overhang added at the end of each spatial dim, filled with `value`.
  TensorIr extend(Rewrite& r, const TensorIr& t, double value) const {
    if (!overhangs()) return t;
    PadAttrs p;
    p.count = a.dims;
    for (int d = 0; d < a.dims; ++d)
      p.after[static_cast<std::size_t>(a.dims - 1 - d)] = overhang[static_cast<std::size_t>(d)];
    p.value = value;
    return r.emit(OpKind::pad, {t}, p.encode());
  }
  // t [n, c, *in] as its windows [n, c, kk, L], the padding and overhang reading `value`.
  TensorIr columns(Rewrite& r, const TensorIr& t, double value) const {
    const TensorIr cols = r.emit(OpKind::unfold, {extend(r, t, value)}, unfold(true, value));
    return r.reshape(cols, {t.shape[0], t.shape[1], kk, windows});
  }
  // Each window's torch divisor as f32 [1, 1, L]: the window's elements inside the input, or
  // with count_include_pad inside the padded input (never the overhang): the windows of a plane
  // of ones.
  TensorIr divisors(Rewrite& r) const {
    Ints plane{1, 1};
    for (int d = 0; d < a.dims; ++d)
      plane.push_back(in[static_cast<std::size_t>(d)] + (a.count_include_pad ? 2 * a.padding[d] : 0));
    const TensorIr ones = r.emit(OpKind::full, {}, FullAttrs{{Shape(plane), DType::f32}, 1.0}.encode());
    const TensorIr cols = r.emit(OpKind::unfold, {extend(r, ones, 0.0)}, unfold(!a.count_include_pad, 0.0));
    return r.emit(OpKind::sum, {cols}, dims_attrs({1}, /*keepdim=*/true));
  }
  // The position in the plane (h * W + w) of every window element [kk * L], an element in the
  // padding naming the window's first element inside the input (torch's index of a window
  // whose elements are all -inf, the only one that can pick the padding).
  TensorIr positions(Rewrite& r) const {
    std::int64_t n = 1;
    for (std::int64_t v : in) n *= v;
    const TensorIr flat = r.emit(OpKind::arange, {}, ArangeAttrs{{Shape{n}, DType::i64}, 0.0, 1.0}.encode());
    Ints plane{1, 1};
    plane.insert(plane.end(), in.begin(), in.end());
    const auto outside = static_cast<double>(n);  // past every position: the minimum skips it
    const TensorIr at = r.emit(OpKind::unfold, {extend(r, r.reshape(flat, plane), outside)}, unfold(true, outside));
    const TensorIr first = r.emit(OpKind::min, {at}, dims_attrs({1}, /*keepdim=*/true));
    const TensorIr padding = r.emit(OpKind::eq, {at}, scalar_attrs(outside, ScalarSide::Rhs));
    return r.reshape(r.emit(OpKind::where, {padding, first, at}), {kk * windows});
  }
};

Ints spatial(const Shape& s) { return tail(s, 2); }

// max_pool: the maximum of each window's columns (-inf in the padding); the index is the first
// maximum's position (argmax), or where the window holds a NaN, the last NaN's (argmax of the
// window reversed), as torch's kernels choose.
void max_pool(const OpIr& op, Rewrite& r) {
  const TensorIr& x = op.inputs[0];
  const PoolWindow w(op, spatial(x.shape), spatial(op.outputs[0].shape));
  const std::int64_t n = x.shape[0], c = x.shape[1];
  const double inf = std::numeric_limits<double>::infinity();
  Ints shape = {n, c};
  shape.insert(shape.end(), w.out.begin(), w.out.end());
  const TensorIr cols = w.columns(r, x, -inf);
  const TensorIr best = r.emit(OpKind::max, {cols}, dims_attrs({2}));
  if (!w.a.with_indices) return r.finish(OpKind::reshape, {best}, dims_attrs(shape));
  const TensorIr first = r.emit(OpKind::argmax, {cols}, dim_attrs(2));
  OpAttrs reverse;
  reverse.ints = {2};
  const TensorIr from_end = r.emit(OpKind::argmax, {r.emit(OpKind::flip, {cols}, std::move(reverse))}, dim_attrs(2));
  const TensorIr last = r.emit(OpKind::sub, {from_end}, scalar_attrs(static_cast<double>(w.kk - 1), ScalarSide::Lhs));
  const TensorIr chosen = r.emit(OpKind::where, {r.emit(OpKind::isnan, {best}), last, first});
  // Window l's offset k is entry k * L + l of the positions.
  const TensorIr row = r.emit(OpKind::mul, {chosen}, scalar_attrs(static_cast<double>(w.windows), ScalarSide::Rhs));
  const TensorIr l = r.emit(OpKind::arange, {}, ArangeAttrs{{Shape{w.windows}, DType::i64}, 0.0, 1.0}.encode());
  const TensorIr entry = r.reshape(r.emit(OpKind::add, {row, l}), {n * c * w.windows});
  const TensorIr picked = r.emit(OpKind::index_select, {w.positions(r), entry}, OpAttrs{});
  r.output(0, OpKind::reshape, {best}, dims_attrs(shape));
  r.output(1, OpKind::reshape, {picked}, dims_attrs(shape));
  r.done();
}

// avg_pool: each window's sum (0 in the padding) over its divisor, summed and divided in f32.
void avg_pool(const OpIr& op, Rewrite& r) {
  const TensorIr& x = op.inputs[0];
  const PoolWindow w(op, spatial(x.shape), spatial(op.outputs[0].shape));
  TensorIr cols = w.columns(r, x, 0.0);
  if (cols.dtype != DType::f32) {
    OpAttrs to_f32;
    to_f32.dtype = DType::f32;
    cols = r.emit(OpKind::cast, {cols}, std::move(to_f32));
  }
  TensorIr y = r.emit(OpKind::div, {r.emit(OpKind::sum, {cols}, dims_attrs({2})), w.divisors(r)});
  if (x.dtype != DType::f32) {
    OpAttrs back;
    back.dtype = x.dtype;
    y = r.emit(OpKind::cast, {y}, std::move(back));
  }
  r.finish(OpKind::reshape, {y}, dims_attrs(op.outputs[0].shape.to_vector()));
}

// max_pool_grad: dy added into a zero plane at the indices.
void max_pool_grad(const OpIr& op, Rewrite& r) {
  const TensorIr &dy = op.inputs[0], &indices = op.inputs[1];
  const std::int64_t n = dy.shape[0], c = dy.shape[1], windows = product(spatial(dy.shape));
  const Shape& dx = op.outputs[0].shape;
  const TensorIr zeros =
      r.emit(OpKind::full, {}, FullAttrs{{Shape{n, c, product(spatial(dx))}, dy.dtype}, 0.0}.encode());
  OpAttrs along;
  along.dim = 2;
  const TensorIr sums =
      r.emit(OpKind::scatter_add, {zeros, r.reshape(indices, {n, c, windows}), r.reshape(dy, {n, c, windows})}, along);
  r.finish(OpKind::reshape, {sums}, dims_attrs(dx.to_vector()));
}

// avg_pool_grad: each dy over its divisor, copied to every offset of its window and folded back
// (fold drops what lands in the padding; the overhang is sliced off after).
void avg_pool_grad(const OpIr& op, Rewrite& r) {
  const TensorIr& dy = op.inputs[0];
  const Shape& dx = op.outputs[0].shape;
  const PoolWindow w(op, spatial(dx), spatial(dy.shape));
  const std::int64_t n = dy.shape[0], c = dy.shape[1];
  TensorIr g = r.reshape(dy, {n, c, 1, w.windows});
  if (g.dtype != DType::f32) {
    OpAttrs to_f32;
    to_f32.dtype = DType::f32;
    g = r.emit(OpKind::cast, {g}, std::move(to_f32));
  }
  const TensorIr share = r.emit(OpKind::div, {g, r.reshape(w.divisors(r), {1, 1, 1, w.windows})});
  const TensorIr spread = r.emit(OpKind::expand, {share}, dims_attrs({n, c, w.kk, w.windows}));
  WindowAttrs fold;
  fold.dims = w.a.dims;
  fold.kernel = w.a.kernel;
  fold.dilation = w.a.dilation;
  fold.padding = w.a.padding;
  fold.stride = w.a.stride;
  for (int d = 0; d < w.a.dims; ++d) {
    const auto i = static_cast<std::size_t>(d);
    fold.output_size[i] = w.in[i] + w.overhang[i];
  }
  TensorIr image = r.emit(OpKind::fold, {r.reshape(spread, {n, c * w.kk, w.windows})}, fold.encode(OpKind::fold));
  if (w.overhangs()) {
    SliceAttrs cut;
    cut.rank = dx.rank();
    for (int d = 0; d < dx.rank(); ++d) cut.dims[static_cast<std::size_t>(d)] = {0, dx[d], 1};
    image = r.emit(OpKind::slice, {image}, cut.encode());
  }
  if (image.dtype != dy.dtype) {
    OpAttrs back;
    back.dtype = dy.dtype;
    image = r.emit(OpKind::cast, {image}, std::move(back));
  }
  r.finish(OpKind::reshape, {image}, dims_attrs(dx.to_vector()));
}

// ---- batch norm ----

// The dims a batch norm reduces (all but the channels, dim 1), as a reduction's attrs.
OpAttrs over_channels(const TensorIr& x, double correction = 0.0) {
  OpAttrs a;
  a.ints.push_back(0);
  for (int d = 2; d < x.shape.rank(); ++d) a.ints.push_back(d);
  a.scalar = correction;  // var's
  return a;
}
// [C] -> [1, C, 1, ...] against x.
TensorIr per_channel(Rewrite& r, const TensorIr& t, const TensorIr& x) {
  Ints shape(static_cast<std::size_t>(x.shape.rank()), 1);
  shape[1] = x.shape[1];
  return r.reshape(t, std::move(shape));
}

// A cast's attrs.
OpAttrs cast_to(DType dtype) {
  OpAttrs a;
  a.dtype = dtype;
  return a;
}
// t in f32: itself, or a cast of a 16-bit tensor (fused into what reads it).
TensorIr wide(Rewrite& r, const TensorIr& t) {
  return t.dtype == DType::f32 ? t : r.emit(OpKind::cast, {t}, cast_to(DType::f32));
}
// Whether a batch norm's tensors hold 16-bit floats: then its statistics and normalization run
// in f32 and each output is rounded once, as PyTorch computes them (statistics rounded to 16 bits
// before x is centred were 2-8x one rounding off: bf16 outputs 0.02-0.03 off at mean 50).
bool narrow(std::initializer_list<TensorIr> ts) {
  for (const TensorIr& t : ts)
    if (t.dtype != DType::f32) return true;
  return false;
}

// batch_norm: the batch's mean and biased variance per channel, then
// y = (x - mean) * rsqrt(var + eps) * weight + bias.
void batch_norm(const OpIr& op, Rewrite& r) {
  const TensorIr &x = op.inputs[0], &w = op.inputs[1], &b = op.inputs[2];
  const double eps = op.attrs.scalar;
  if (narrow({x, w, b})) {
    const TensorIr xf = wide(r, x);
    const TensorIr mean = r.emit(OpKind::mean, {xf}, over_channels(x));
    const TensorIr var = r.emit(OpKind::var, {xf}, over_channels(x));
    r.output(1, OpKind::cast, {mean}, cast_to(op.outputs[1].dtype));
    r.output(2, OpKind::cast, {var}, cast_to(op.outputs[2].dtype));
    const TensorIr invstd =
        r.emit(OpKind::rsqrt, {r.emit(OpKind::add, {per_channel(r, var, x)}, scalar_attrs(eps, ScalarSide::Rhs))});
    const TensorIr centered = r.emit(OpKind::sub, {xf, per_channel(r, mean, x)});
    const TensorIr scaled =
        r.emit(OpKind::mul, {r.emit(OpKind::mul, {centered, invstd}), per_channel(r, wide(r, w), x)});
    const TensorIr y = r.emit(OpKind::add, {scaled, per_channel(r, wide(r, b), x)});
    r.finish(OpKind::cast, {y}, cast_to(op.outputs[0].dtype));
    return;
  }
  const TensorIr mean = r.output(1, OpKind::mean, {x}, over_channels(x));
  const TensorIr var = r.output(2, OpKind::var, {x}, over_channels(x));
  const TensorIr invstd = r.emit(OpKind::rsqrt, {r.emit(OpKind::add, {per_channel(r, var, x)}, scalar_attrs(eps, ScalarSide::Rhs))});
  const TensorIr centered = r.emit(OpKind::sub, {x, per_channel(r, mean, x)});
  const TensorIr scaled = r.emit(OpKind::mul, {r.emit(OpKind::mul, {centered, invstd}), per_channel(r, w, x)});
  r.finish(OpKind::add, {scaled, per_channel(r, b, x)});
}

// batch_norm_backward, from the statistics of x again (M values per channel):
// dbias = sum(dy), dweight = sum(dy * (x - mean)) * invstd and
// dx = (dy - dbias / M - (x - mean) * invstd^2 * sum(dy * (x - mean)) / M) * invstd * weight.
// 16-bit tensors: all of it in f32, each gradient rounded once.
void batch_norm_backward(const OpIr& op, Rewrite& r) {
  const TensorIr &dy0 = op.inputs[0], &x0 = op.inputs[1], &w0 = op.inputs[2];
  const bool round_once = narrow({dy0, x0, w0});
  const TensorIr dy = wide(r, dy0), x = wide(r, x0), w = wide(r, w0);
  const double eps = op.attrs.scalar, count = static_cast<double>(x.numel() / std::max<std::int64_t>(x.shape[1], 1));
  const TensorIr mean = r.emit(OpKind::mean, {x}, over_channels(x));
  const TensorIr invstd =
      r.emit(OpKind::rsqrt, {r.emit(OpKind::add, {r.emit(OpKind::var, {x}, over_channels(x))}, scalar_attrs(eps, ScalarSide::Rhs))});
  const TensorIr centered = r.emit(OpKind::sub, {x, per_channel(r, mean, x)});
  const TensorIr dbias = round_once ? r.emit(OpKind::sum, {dy}, over_channels(x)) : r.output(2, OpKind::sum, {dy}, over_channels(x));
  const TensorIr dot = r.emit(OpKind::sum, {r.emit(OpKind::mul, {dy, centered})}, over_channels(x));
  if (round_once) {
    r.output(2, OpKind::cast, {dbias}, cast_to(op.outputs[2].dtype));
    r.output(1, OpKind::cast, {r.emit(OpKind::mul, {dot, invstd})}, cast_to(op.outputs[1].dtype));
  } else {
    r.output(1, OpKind::mul, {dot, invstd});
  }
  const TensorIr k =
      r.emit(OpKind::div, {r.emit(OpKind::mul, {dot, r.emit(OpKind::square, {invstd})})}, scalar_attrs(count, ScalarSide::Rhs));
  const TensorIr mean_dy = r.emit(OpKind::div, {dbias}, scalar_attrs(count, ScalarSide::Rhs));
  const TensorIr centered_dy = r.emit(OpKind::sub, {dy, per_channel(r, mean_dy, x)});
  const TensorIr projected = r.emit(OpKind::sub, {centered_dy, r.emit(OpKind::mul, {centered, per_channel(r, k, x)})});
  const TensorIr scale = per_channel(r, r.emit(OpKind::mul, {invstd, w}), x);
  if (round_once)
    r.finish(OpKind::cast, {r.emit(OpKind::mul, {projected, scale})}, cast_to(op.outputs[0].dtype));
  else
    r.finish(OpKind::mul, {projected, scale});
}

}  // namespace decompositions

const char* decompose(const OpIr& op, EntityId& next_id, std::vector<OpIr>& out) {
  decompositions::Rewrite r(op, next_id, out);
  switch (op.kind) {
    case OpKind::matmul:
      if (const MatmulAttrs t = MatmulAttrs::decode(op); !t.transpose_a && !t.transpose_b) return nullptr;
      decompositions::matmul_transposed(op, r);
      return "matmul_transposed";
    case OpKind::conv:
      decompositions::conv(op, r);
      return "conv_as_unfold_matmul";
    case OpKind::conv_input_grad:
      decompositions::conv_input_grad(op, r);
      return "conv_input_grad_as_matmul_fold";
    case OpKind::conv_weight_grad:
      decompositions::conv_weight_grad(op, r);
      return "conv_weight_grad_as_unfold_matmul";
    case OpKind::max_pool:
      decompositions::max_pool(op, r);
      return "max_pool_as_unfold_max";
    case OpKind::avg_pool:
      decompositions::avg_pool(op, r);
      return "avg_pool_as_unfold_sum";
    case OpKind::max_pool_grad:
      decompositions::max_pool_grad(op, r);
      return "max_pool_grad_as_scatter_add";
    case OpKind::avg_pool_grad:
      decompositions::avg_pool_grad(op, r);
      return "avg_pool_grad_as_fold";
    case OpKind::batch_norm:
      decompositions::batch_norm(op, r);
      return "batch_norm_as_reductions";
    case OpKind::batch_norm_backward:
      decompositions::batch_norm_backward(op, r);
      return "batch_norm_backward_as_reductions";
    default:
      return nullptr;
  }
}

}  // namespace kiln
