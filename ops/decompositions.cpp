// The decomposition rules (ops/decompositions.h). Each builds its messages with Rewrite, which
// shapes the intermediates by the ops' own shape rules and hands every entity that ends inside
// the rewrite over to its last reader.
#include "kiln/ops/decompositions.h"

#include <algorithm>
#include <initializer_list>

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
    for (std::size_t i = first_; i + 1 < out_.size(); ++i)
      for (const TensorIr& t : out_[i].outputs)
        if (!is_output(t.id)) ending.push_back(t.id);
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
  bool is_output(EntityId id) const {
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

// The dims a batch norm reduces (all but the channels, dim 1), as a reduction's attrs.
OpAttrs over_channels(const TensorIr& x, double correction = 0.0) {
  OpAttrs a;
  a.ints.push_back(0);
  for (int d = 2; d < x.shape.rank(); ++d) a.ints.push_back(d);
  a.scalar = correction;  // var's
  return a;
}
OpAttrs scalar_rhs(double v) {
  OpAttrs a;
  a.scalar = v;
  a.scalar_side = ScalarSide::Rhs;
  return a;
}
// [C] -> [1, C, 1, ...] against x.
TensorIr per_channel(Rewrite& r, const TensorIr& t, const TensorIr& x) {
  Ints shape(static_cast<std::size_t>(x.shape.rank()), 1);
  shape[1] = x.shape[1];
  return r.reshape(t, std::move(shape));
}

// batch_norm: the batch's mean and biased variance per channel, then
// y = (x - mean) * rsqrt(var + eps) * weight + bias.
void batch_norm(const OpIr& op, Rewrite& r) {
  const TensorIr &x = op.inputs[0], &w = op.inputs[1], &b = op.inputs[2];
  const double eps = op.attrs.scalar;
  const TensorIr mean = r.output(1, OpKind::mean, {x}, over_channels(x));
  const TensorIr var = r.output(2, OpKind::var, {x}, over_channels(x));
  const TensorIr invstd = r.emit(OpKind::rsqrt, {r.emit(OpKind::add, {per_channel(r, var, x)}, scalar_rhs(eps))});
  const TensorIr centered = r.emit(OpKind::sub, {x, per_channel(r, mean, x)});
  const TensorIr scaled = r.emit(OpKind::mul, {r.emit(OpKind::mul, {centered, invstd}), per_channel(r, w, x)});
  r.finish(OpKind::add, {scaled, per_channel(r, b, x)});
}

// batch_norm_backward, from the statistics of x again (M values per channel):
// dbias = sum(dy), dweight = sum(dy * (x - mean)) * invstd and
// dx = (dy - dbias / M - (x - mean) * invstd^2 * sum(dy * (x - mean)) / M) * invstd * weight.
void batch_norm_backward(const OpIr& op, Rewrite& r) {
  const TensorIr &dy = op.inputs[0], &x = op.inputs[1], &w = op.inputs[2];
  const double eps = op.attrs.scalar, count = static_cast<double>(x.numel() / std::max<std::int64_t>(x.shape[1], 1));
  const TensorIr mean = r.emit(OpKind::mean, {x}, over_channels(x));
  const TensorIr invstd =
      r.emit(OpKind::rsqrt, {r.emit(OpKind::add, {r.emit(OpKind::var, {x}, over_channels(x))}, scalar_rhs(eps))});
  const TensorIr centered = r.emit(OpKind::sub, {x, per_channel(r, mean, x)});
  const TensorIr dbias = r.output(2, OpKind::sum, {dy}, over_channels(x));
  const TensorIr dot = r.emit(OpKind::sum, {r.emit(OpKind::mul, {dy, centered})}, over_channels(x));
  r.output(1, OpKind::mul, {dot, invstd});
  const TensorIr k =
      r.emit(OpKind::div, {r.emit(OpKind::mul, {dot, r.emit(OpKind::square, {invstd})})}, scalar_rhs(count));
  const TensorIr mean_dy = r.emit(OpKind::div, {dbias}, scalar_rhs(count));
  const TensorIr centered_dy = r.emit(OpKind::sub, {dy, per_channel(r, mean_dy, x)});
  const TensorIr projected = r.emit(OpKind::sub, {centered_dy, r.emit(OpKind::mul, {centered, per_channel(r, k, x)})});
  r.finish(OpKind::mul, {projected, per_channel(r, r.emit(OpKind::mul, {invstd, w}), x)});
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
