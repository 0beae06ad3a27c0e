// Attention: scaled dot-product attention (the function) and multi-head attention (the layer,
// torch.nn.MultiheadAttention with its parameter names, so weights move both ways).
//
//   nn::MultiHeadAttention attn(512, 8, {.batch_first = true});
//   auto [out, weights] = attn.forward(x, x, x, {.key_padding_mask = pad, .is_causal = true});
//
// (The call operator forwards its arguments as a template does, so it takes the options as a
// named AttentionForwardOptions; forward also takes them braced, as above.)
//
// Masks follow torch. MultiHeadAttention's bool masks mark what to leave out (true = ignore);
// scaled_dot_product_attention's bool mask, as torch 2's F.scaled_dot_product_attention, marks
// what may be attended (true = take part). Float masks are added to the scores in both.
#pragma once
#include <optional>

#include "kiln/nn/activation.h"
#include "kiln/nn/linear.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

struct ScaledDotProductOptions {
  // Broadcast to [..., L, S]: bool (true = may attend) or float (added to the scores).
  Tensor attn_mask{};
  double dropout_p = 0.0;  // applied whenever > 0, as torch does (the function knows no mode)
  bool is_causal = false;  // query i attends keys j <= i; not together with attn_mask (as torch)
  std::optional<double> scale{};  // default 1 / sqrt(head dim)
};

// softmax(query keyᵀ · scale + mask) value for query [..., L, D], key [..., S, D] and value
// [..., S, Dv] (leading dims broadcast): [..., L, Dv]. A row whose keys are all masked gives NaN,
// as in torch.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const ScaledDotProductOptions& options = {}, Generator& gen = default_generator());

struct MultiHeadAttentionOptions {
  double dropout = 0.0;  // on the attention weights, in training mode
  bool bias = true;      // in_proj_bias and out_proj.bias
  std::optional<std::int64_t> kdim{}, vdim{};  // key and value features (default embed_dim)
  bool batch_first = false;  // inputs [N, L, E] rather than torch's default [L, N, E]
  Device device = Device::cpu();
};

// What one call attends with. N is the batch, L the query length, S the key length.
struct AttentionForwardOptions {
  // bool (true = ignore that key) or float (added): [N, S], or [S] for unbatched inputs.
  Tensor key_padding_mask{};
  // bool (true = ignore) or float (added): [L, S] for every batch and head, or one per batch
  // element and head, [N * num_heads, L, S] ([num_heads, L, S] for unbatched inputs).
  Tensor attn_mask{};
  // Query i attends only keys j <= i. Applied on top of attn_mask, so torch 2's use of the flag
  // as a hint that attn_mask is the causal mask gives the same result.
  bool is_causal = false;
  bool need_weights = true;          // return the attention weights
  bool average_attn_weights = true;  // averaged over heads: [N, L, S]; else [N, heads, L, S]
};

struct AttentionOutput {
  Tensor output;   // like the query: [L, N, E], [N, L, E] (batch_first) or [L, E] (unbatched)
  Tensor weights;  // after dropout, as torch returns them; undefined unless need_weights
};

// torch.nn.MultiheadAttention: in_proj_weight [3E, E] when kdim == vdim == E, else
// q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim]; in_proj_bias [3E];
// out_proj (a Linear). Initialized as torch does: xavier_uniform on the input projections, zero
// biases, out_proj.weight as a Linear's.
class MultiHeadAttention : public Module {
 public:
  using Options = MultiHeadAttentionOptions;
  MultiHeadAttention(std::int64_t embed_dim, std::int64_t num_heads, const MultiHeadAttentionOptions& options = {});
  // query [L, N, E], key [S, N, kdim], value [S, N, vdim] (batch_first: N first; unbatched:
  // no N). Passing one tensor as query, key and value (self-attention) takes one projection.
  AttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                          const AttentionForwardOptions& options = {}) const;
  std::string describe() const override;

  std::int64_t embed_dim() const { return embed_dim_; }
  std::int64_t num_heads() const { return num_heads_; }
  std::int64_t head_dim() const { return embed_dim_ / num_heads_; }
  std::int64_t kdim() const { return kdim_; }
  std::int64_t vdim() const { return vdim_; }
  bool batch_first() const { return batch_first_; }

  Parameter in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias;
  Linear out_proj;
  Dropout dropout;  // holds no tensors: the state_dict is torch's
  KILN_MODULE(MultiHeadAttention, in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias,
              out_proj, dropout)

 private:
  struct Projected;
  Projected project(const Tensor& query, const Tensor& key, const Tensor& value) const;
  void check_inputs(const Tensor& query, const Tensor& key, const Tensor& value,
                    const AttentionForwardOptions& options) const;

  std::int64_t embed_dim_, num_heads_, kdim_, vdim_;
  bool batch_first_;
  double dropout_p_;
};

}  // namespace kiln::nn
