// Scaled dot-product attention and MultiHeadAttention, written with kiln's public ops: the
// products are matmuls, and the scaling, the masks and the softmax fuse into one kernel
// (softmax takes the elementwise ops before it as its prologue).
#include "kiln/nn/attention.h"

#include <cmath>
#include <limits>

#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"

namespace kiln::nn {

namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

std::string shape_of(const Tensor& t) { return t.defined() ? t.shape().str() : std::string("undefined"); }

// Query i may attend key j only when j <= i: true above the diagonal of [L, S] (what to leave out).
Tensor causal_ignore(std::int64_t l, std::int64_t s, Device device) {
  const TensorOptions on{DType::f32, device};
  return gt(reshape(arange(static_cast<double>(s), on), {1, s}), reshape(arange(static_cast<double>(l), on), {l, 1}));
}

// A mask that marks what to leave out (bool true) or what to add (float), applied to the scores.
Tensor apply_ignore_mask(Tensor scores, const Tensor& mask) {
  if (mask.dtype() == DType::bool_) return kiln::where(mask, kMinusInf, std::move(scores));
  return add(std::move(scores), mask);
}

bool is_mask_dtype(const Tensor& mask) { return mask.dtype() == DType::bool_ || is_floating(mask.dtype()); }

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const ScaledDotProductOptions& o, Generator& gen) {
  const char* op = "scaled_dot_product_attention";
  KILN_CHECK(query.defined() && key.defined() && value.defined() && query.rank() >= 2 && key.rank() >= 2 &&
                 value.rank() >= 2 && query.size(-1) == key.size(-1) && key.size(-2) == value.size(-2),
             op,
             "expected query [..., L, D], key [..., S, D] and value [..., S, Dv], got " + shape_of(query) + ", " +
                 shape_of(key) + " and " + shape_of(value));
  KILN_CHECK(!(o.is_causal && o.attn_mask.defined()), op, "is_causal and attn_mask cannot both be set (as in torch)");
  KILN_CHECK(o.dropout_p >= 0.0 && o.dropout_p <= 1.0, op, "dropout_p must be in [0, 1]");
  const std::int64_t l = query.size(-2), s = key.size(-2);
  if (o.attn_mask.defined())
    KILN_CHECK(is_mask_dtype(o.attn_mask), op,
               std::string("attn_mask must be bool or floating, got ") + dtype_name(o.attn_mask.dtype()));
  const double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(-1))));
  Tensor scores = mul(matmul(query, key, {.transpose_b = true}), scale);
  if (o.is_causal) scores = where(causal_ignore(l, s, query.device()), kMinusInf, std::move(scores));
  if (o.attn_mask.defined()) {
    // torch 2's convention: a bool mask says which keys take part.
    scores = o.attn_mask.dtype() == DType::bool_ ? where(o.attn_mask, std::move(scores), kMinusInf)
                                                : add(std::move(scores), o.attn_mask);
  }
  Tensor weights = softmax(std::move(scores), -1);
  if (o.dropout_p > 0.0) weights = dropout(std::move(weights), o.dropout_p, true, gen);
  return matmul(std::move(weights), value);
}

namespace {

std::int64_t checked_embed_dim(std::int64_t embed_dim, std::int64_t num_heads, const MultiHeadAttentionOptions& o) {
  const char* op = "MultiHeadAttention";
  KILN_CHECK(embed_dim > 0 && num_heads > 0, op,
             "embed_dim and num_heads must be positive, got " + std::to_string(embed_dim) + " and " +
                 std::to_string(num_heads));
  KILN_CHECK(embed_dim % num_heads == 0, op,
             "embed_dim (" + std::to_string(embed_dim) + ") must be divisible by num_heads (" +
                 std::to_string(num_heads) + ")");
  KILN_CHECK(o.kdim.value_or(1) > 0 && o.vdim.value_or(1) > 0, op, "kdim and vdim must be positive");
  KILN_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0, op, "dropout must be in [0, 1], got " + std::to_string(o.dropout));
  return embed_dim;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::int64_t e, std::int64_t heads, const MultiHeadAttentionOptions& o)
    : out_proj(checked_embed_dim(e, heads, o), e, {.bias = o.bias, .device = o.device}),
      dropout({.p = o.dropout, .seed = default_generator().next_draw()}),
      embed_dim_(e),
      num_heads_(heads),
      kdim_(o.kdim.value_or(e)),
      vdim_(o.vdim.value_or(e)),
      batch_first_(o.batch_first),
      dropout_p_(o.dropout) {
  const TensorOptions on{DType::f32, o.device};
  if (kdim_ == e && vdim_ == e) {
    in_proj_weight = Parameter(xavier_uniform(Shape{3 * e, e}, 1.0, default_generator(), on));
  } else {
    q_proj_weight = Parameter(xavier_uniform(Shape{e, e}, 1.0, default_generator(), on));
    k_proj_weight = Parameter(xavier_uniform(Shape{e, kdim_}, 1.0, default_generator(), on));
    v_proj_weight = Parameter(xavier_uniform(Shape{e, vdim_}, 1.0, default_generator(), on));
  }
  if (o.bias) {
    in_proj_bias = Parameter(zeros(Shape{3 * e}, on));
    out_proj.bias = Parameter(zeros(Shape{e}, on));
  }
}

std::string MultiHeadAttention::describe() const {
  std::string s = "embed_dim=" + std::to_string(embed_dim_) + ", num_heads=" + std::to_string(num_heads_);
  if (dropout_p_ > 0.0) s += ", dropout=" + std::to_string(dropout_p_);
  if (!in_proj_bias.defined()) s += ", bias=false";
  if (kdim_ != embed_dim_ || vdim_ != embed_dim_) s += ", kdim=" + std::to_string(kdim_) + ", vdim=" + std::to_string(vdim_);
  if (batch_first_) s += ", batch_first=true";
  return s;
}

void MultiHeadAttention::check_inputs(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionForwardOptions& o) const {
  const std::string shapes = "query " + shape_of(q) + ", key " + shape_of(k) + ", value " + shape_of(v);
  const std::string layout = batch_first_ ? "[N, L, E]" : "[L, N, E]";
  KILN_CHECK(q.defined() && k.defined() && v.defined() && (q.rank() == 2 || q.rank() == 3) && k.rank() == q.rank() &&
                 v.rank() == q.rank(),
             where(), "expected query, key and value all " + layout + " or all unbatched [L, E], got " + shapes);
  const bool batched = q.rank() == 3;
  const int seq = batched && batch_first_ ? 1 : 0;
  KILN_CHECK(q.size(-1) == embed_dim_ && k.size(-1) == kdim_ && v.size(-1) == vdim_, where(),
             "expected features E = " + std::to_string(embed_dim_) + " (query), kdim = " + std::to_string(kdim_) +
                 " (key), vdim = " + std::to_string(vdim_) + " (value), got " + shapes);
  KILN_CHECK(k.size(seq) == v.size(seq) && (!batched || (k.size(1 - seq) == q.size(1 - seq) &&
                                                         v.size(1 - seq) == q.size(1 - seq))),
             where(), "key and value must have the same length, and the query's batch size: " + shapes);
  const std::int64_t n = batched ? q.size(1 - seq) : 1, l = q.size(seq), s = k.size(seq);
  const Tensor& kpm = o.key_padding_mask;
  if (kpm.defined()) {
    const Shape want = batched ? Shape{n, s} : Shape{s};
    KILN_CHECK(is_mask_dtype(kpm) && kpm.shape() == want, where(),
               "key_padding_mask must be bool or float " + want.str() + ", got " +
                   std::string(dtype_name(kpm.dtype())) + " " + kpm.shape().str() + " (" + shapes + ")");
  }
  const Tensor& am = o.attn_mask;
  if (am.defined()) {
    const Shape per_head = batched ? Shape{n * num_heads_, l, s} : Shape{num_heads_, l, s};
    const Shape shared({l, s});
    KILN_CHECK(is_mask_dtype(am) && (am.shape() == shared || am.shape() == per_head), where(),
               "attn_mask must be bool or float " + shared.str() + " or " + per_head.str() + ", got " +
                   std::string(dtype_name(am.dtype())) + " " + am.shape().str() + " (" + shapes + ")");
  }
}

// The projections of query, key and value as [N, H, L, D], [N, H, D, S] (transposed for the
// product) and [N, H, S, D].
struct MultiHeadAttention::Projected {
  Tensor q, k_t, v;
};

MultiHeadAttention::Projected MultiHeadAttention::project(const Tensor& query, const Tensor& key,
                                                          const Tensor& value) const {
  const std::int64_t e = embed_dim_;
  const auto bias_rows = [&](std::int64_t i) { return in_proj_bias.defined() ? narrow(in_proj_bias, 0, i * e, e) : Tensor{}; };
  Tensor q, k, v;
  if (in_proj_weight.defined()) {
    // As torch's packed projection: one product for self-attention, one for key and value
    // when they are one tensor.
    const bool kv_same = key.id() == value.id();
    if (kv_same && query.id() == key.id()) {
      std::vector<Tensor> qkv = split(linear(query, in_proj_weight, in_proj_bias), e, -1);
      q = std::move(qkv[0]), k = std::move(qkv[1]), v = std::move(qkv[2]);
    } else {
      q = linear(query, narrow(in_proj_weight, 0, 0, e), bias_rows(0));
      if (kv_same) {
        Tensor kv_bias = in_proj_bias.defined() ? narrow(in_proj_bias, 0, e, 2 * e) : Tensor{};
        std::vector<Tensor> kv = split(linear(key, narrow(in_proj_weight, 0, e, 2 * e), std::move(kv_bias)), e, -1);
        k = std::move(kv[0]), v = std::move(kv[1]);
      } else {
        k = linear(key, narrow(in_proj_weight, 0, e, e), bias_rows(1));
        v = linear(value, narrow(in_proj_weight, 0, 2 * e, e), bias_rows(2));
      }
    }
  } else {
    q = linear(query, q_proj_weight, bias_rows(0));
    k = linear(key, k_proj_weight, bias_rows(1));
    v = linear(value, v_proj_weight, bias_rows(2));
  }
  // [A, B, E] (batch first: A = N; else B = N) split into heads and laid out batch, head first.
  const std::int64_t h = num_heads_, d = head_dim();
  const auto heads = [&](Tensor x, bool transposed) {
    const std::int64_t a = x.size(0), b = x.size(1);
    std::vector<std::int64_t> order = batch_first_ ? std::vector<std::int64_t>{0, 2, 1, 3}
                                                   : std::vector<std::int64_t>{1, 2, 0, 3};
    if (transposed) std::swap(order[2], order[3]);
    return permute(reshape(std::move(x), {a, b, h, d}), order);
  };
  return {heads(std::move(q), false), heads(std::move(k), true), heads(std::move(v), false)};
}

AttentionOutput MultiHeadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                            const AttentionForwardOptions& o) const {
  check_inputs(query, key, value, o);
  return guarded([&] {
    const bool batched = query.rank() == 3;
    const int batch_dim = batch_first_ ? 0 : 1;
    // Unbatched inputs take a batch of one, as torch does; one tensor stays one tensor, so
    // self-attention keeps its single projection.
    const auto batch = [&](const Tensor& x) { return batched ? x : unsqueeze(x, batch_dim); };
    const Tensor q_in = batch(query);
    const Tensor k_in = key.id() == query.id() ? q_in : batch(key);
    const Tensor v_in = value.id() == key.id() ? k_in : batch(value);
    const std::int64_t n = q_in.size(batch_dim), l = q_in.size(1 - batch_dim), s = k_in.size(1 - batch_dim);
    Projected p = project(q_in, k_in, v_in);

    Tensor scores = mul(matmul(std::move(p.q), std::move(p.k_t)), 1.0 / std::sqrt(static_cast<double>(head_dim())));
    if (o.attn_mask.defined()) {
      Tensor mask = o.attn_mask.rank() == 3 ? reshape(o.attn_mask, {batched ? n : 1, num_heads_, l, s}) : o.attn_mask;
      scores = apply_ignore_mask(std::move(scores), mask);
    }
    if (o.key_padding_mask.defined())
      scores = apply_ignore_mask(std::move(scores), reshape(o.key_padding_mask, {batched ? n : 1, 1, 1, s}));
    if (o.is_causal) scores = kiln::where(causal_ignore(l, s, query.device()), kMinusInf, std::move(scores));
    Tensor weights = dropout(softmax(std::move(scores), -1));

    // The weights are kept only when returned (backward keeps its own handle).
    Tensor heads = o.need_weights ? matmul(weights, std::move(p.v)) : matmul(std::move(weights), std::move(p.v));
    // [N, H, L, D] back to the query's layout [N, L, E] or [L, N, E].
    heads = permute(std::move(heads), batch_first_ ? std::vector<std::int64_t>{0, 2, 1, 3}
                                                   : std::vector<std::int64_t>{2, 0, 1, 3});
    Tensor out = out_proj(reshape(std::move(heads), {batch_first_ ? n : l, batch_first_ ? l : n, embed_dim_}));
    AttentionOutput result;
    result.output = batched ? std::move(out) : squeeze(std::move(out), batch_dim);
    if (o.need_weights) {
      Tensor w = o.average_attn_weights ? mean(std::move(weights), {1}) : std::move(weights);
      result.weights = batched ? std::move(w) : squeeze(std::move(w), 0);
    }
    return result;
  });
}

}  // namespace kiln::nn
