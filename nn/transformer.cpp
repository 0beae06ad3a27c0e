// The transformer layers as torch 1.13 computes them (its non-fused path: the fast path it takes
// in eval mode gives the same values): attention and feed-forward blocks with residual adds,
// layer norms after them (post-norm) or before them (norm_first).
#include "kiln/nn/transformer.h"

namespace kiln::nn {

namespace {

MultiHeadAttentionOptions attention_options(const TransformerLayerOptions& o) {
  MultiHeadAttentionOptions a;
  a.dropout = o.dropout;
  a.batch_first = o.batch_first;
  a.device = o.device;
  return a;
}

// Each Dropout draws its own seed, so the dropouts of one layer do not drop the same elements.
Dropout fresh_dropout(double p) { return Dropout({.p = p, .seed = default_generator().next_draw()}); }

Tensor activate(TransformerActivation a, const Tensor& x) {
  return a == TransformerActivation::gelu ? kiln::gelu(x) : kiln::relu(x);
}

const char* activation_name(TransformerActivation a) { return a == TransformerActivation::gelu ? "gelu" : "relu"; }

std::string layer_describe(const MultiHeadAttention& attn, const TransformerLayerOptions& o) {
  return "d_model=" + std::to_string(attn.embed_dim()) + ", nhead=" + std::to_string(attn.num_heads()) +
         ", dim_feedforward=" + std::to_string(o.dim_feedforward) + ", dropout=" + std::to_string(o.dropout) +
         ", activation=" + activation_name(o.activation) + (o.batch_first ? ", batch_first=true" : "") +
         (o.norm_first ? ", norm_first=true" : "");
}

// A sequence [L, N, E], [N, L, E] or [L, E] of d_model features, checked where the layer
// starts, so that pre-norm layers do not report it from inside their first norm.
void check_sequence(const Module& m, const char* what, const Tensor& x, std::int64_t d_model) {
  KILN_CHECK(x.defined() && (x.rank() == 2 || x.rank() == 3) && x.size(-1) == d_model, m.where(),
             std::string("expected ") + what + " [L, N, " + std::to_string(d_model) + "], [N, L, " +
                 std::to_string(d_model) + "] (batch_first) or [L, " + std::to_string(d_model) + "], got " +
                 (x.defined() ? x.shape().str() : std::string("an undefined tensor")));
}

AttentionForwardOptions masks(const Tensor& attn_mask, const Tensor& key_padding_mask, bool is_causal) {
  AttentionForwardOptions o;
  o.attn_mask = attn_mask;
  o.key_padding_mask = key_padding_mask;
  o.is_causal = is_causal;
  o.need_weights = false;
  return o;
}

void check_layers(const char* stack, std::int64_t num_layers) {
  KILN_CHECK(num_layers > 0, stack, "num_layers must be positive, got " + std::to_string(num_layers));
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(std::int64_t d, std::int64_t nhead, const TransformerLayerOptions& o)
    : self_attn(d, nhead, attention_options(o)),
      linear1(d, o.dim_feedforward, {.device = o.device}),
      dropout(fresh_dropout(o.dropout)),
      linear2(o.dim_feedforward, d, {.device = o.device}),
      norm1({d}, {.eps = o.layer_norm_eps, .device = o.device}),
      norm2({d}, {.eps = o.layer_norm_eps, .device = o.device}),
      dropout1(fresh_dropout(o.dropout)),
      dropout2(fresh_dropout(o.dropout)),
      options_(o) {}

Tensor TransformerEncoderLayer::feed_forward(const Tensor& x) const {
  return dropout2(linear2(dropout(activate(options_.activation, linear1(x)))));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask,
                                        bool is_causal) const {
  check_sequence(*this, "src", src, self_attn.embed_dim());
  const AttentionForwardOptions m = masks(src_mask, src_key_padding_mask, is_causal);
  const auto self_attention = [&](const Tensor& x) { return dropout1(self_attn(x, x, x, m).output); };
  if (options_.norm_first) {
    Tensor x = add(src, self_attention(norm1(src)));
    return add(x, feed_forward(norm2(x)));
  }
  Tensor x = norm1(add(src, self_attention(src)));
  return norm2(add(x, feed_forward(x)));
}

std::string TransformerEncoderLayer::describe() const { return layer_describe(self_attn, options_); }

TransformerDecoderLayer::TransformerDecoderLayer(std::int64_t d, std::int64_t nhead, const TransformerLayerOptions& o)
    : self_attn(d, nhead, attention_options(o)),
      multihead_attn(d, nhead, attention_options(o)),
      linear1(d, o.dim_feedforward, {.device = o.device}),
      dropout(fresh_dropout(o.dropout)),
      linear2(o.dim_feedforward, d, {.device = o.device}),
      norm1({d}, {.eps = o.layer_norm_eps, .device = o.device}),
      norm2({d}, {.eps = o.layer_norm_eps, .device = o.device}),
      norm3({d}, {.eps = o.layer_norm_eps, .device = o.device}),
      dropout1(fresh_dropout(o.dropout)),
      dropout2(fresh_dropout(o.dropout)),
      dropout3(fresh_dropout(o.dropout)),
      options_(o) {}

Tensor TransformerDecoderLayer::feed_forward(const Tensor& x) const {
  return dropout3(linear2(dropout(activate(options_.activation, linear1(x)))));
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                        const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                        const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                        bool memory_is_causal) const {
  check_sequence(*this, "tgt", tgt, self_attn.embed_dim());
  check_sequence(*this, "memory", memory, self_attn.embed_dim());
  const AttentionForwardOptions self_masks = masks(tgt_mask, tgt_key_padding_mask, tgt_is_causal);
  const AttentionForwardOptions memory_masks = masks(memory_mask, memory_key_padding_mask, memory_is_causal);
  const auto self_attention = [&](const Tensor& x) { return dropout1(self_attn(x, x, x, self_masks).output); };
  const auto cross_attention = [&](const Tensor& x) {
    return dropout2(multihead_attn(x, memory, memory, memory_masks).output);
  };
  if (options_.norm_first) {
    Tensor x = add(tgt, self_attention(norm1(tgt)));
    x = add(x, cross_attention(norm2(x)));
    return add(x, feed_forward(norm3(x)));
  }
  Tensor x = norm1(add(tgt, self_attention(tgt)));
  x = norm2(add(x, cross_attention(x)));
  return norm3(add(x, feed_forward(x)));
}

std::string TransformerDecoderLayer::describe() const { return layer_describe(self_attn, options_); }

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& layer, std::int64_t num_layers,
                                       std::optional<LayerNorm> final_norm) {
  check_layers("TransformerEncoder", num_layers);
  for (std::int64_t i = 0; i < num_layers; ++i) layers.push_back(layer.clone());
  norm = std::move(final_norm);
  name_children();
}

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                   bool is_causal) const {
  Tensor x = src;
  for (const TransformerEncoderLayer& layer : layers) x = layer(x, mask, src_key_padding_mask, is_causal);
  return norm ? (*norm)(x) : x;
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& layer, std::int64_t num_layers,
                                       std::optional<LayerNorm> final_norm) {
  check_layers("TransformerDecoder", num_layers);
  for (std::int64_t i = 0; i < num_layers; ++i) layers.push_back(layer.clone());
  norm = std::move(final_norm);
  name_children();
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                   const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                   const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                   bool memory_is_causal) const {
  Tensor x = tgt;
  for (const TransformerDecoderLayer& layer : layers)
    x = layer(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
              memory_is_causal);
  return norm ? (*norm)(x) : x;
}

}  // namespace kiln::nn
