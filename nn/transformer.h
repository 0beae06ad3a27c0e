// Transformer layers and stacks with torch.nn's names: TransformerEncoderLayer (self_attn,
// linear1, dropout, linear2, norm1, norm2, dropout1, dropout2), TransformerDecoderLayer (adds
// multihead_attn, norm3, dropout3), and TransformerEncoder / TransformerDecoder ("layers.0....",
// "norm...."), so a torch state_dict loads by name.
//
//   nn::TransformerEncoderLayer layer(512, 8, {.dim_feedforward = 2048, .batch_first = true});
//   nn::TransformerEncoder encoder(layer, 6, nn::LayerNorm({512}));
//   Tensor y = encoder.forward(x, {}, padding, /*is_causal=*/true);
//
// Masks are MultiHeadAttention's (nn/attention.h): bool true = ignore, float = added.
#pragma once
#include <optional>

#include "kiln/nn/attention.h"
#include "kiln/nn/containers.h"
#include "kiln/nn/norm.h"

namespace kiln::nn {

enum class TransformerActivation { relu, gelu };

struct TransformerLayerOptions {
  std::int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  TransformerActivation activation = TransformerActivation::relu;
  double layer_norm_eps = 1e-5;
  bool batch_first = false;  // [N, L, E] rather than [L, N, E]
  bool norm_first = false;   // pre-norm: x + f(norm(x)); post-norm (torch's default): norm(x + f(x))
  Device device = Device::cpu();
};

class TransformerEncoderLayer : public Module {
 public:
  using Options = TransformerLayerOptions;
  TransformerEncoderLayer(std::int64_t d_model, std::int64_t nhead, const TransformerLayerOptions& options = {});
  // src [L, N, E], [N, L, E] (batch_first) or [L, E]; src_mask [L, L] or [N * nhead, L, L];
  // src_key_padding_mask [N, L] ([L] unbatched).
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false) const;
  std::string describe() const override;

  MultiHeadAttention self_attn;
  Linear linear1;
  Dropout dropout;
  Linear linear2;
  LayerNorm norm1, norm2;
  Dropout dropout1, dropout2;
  KILN_MODULE(TransformerEncoderLayer, self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2)

 private:
  Tensor feed_forward(const Tensor& x) const;
  TransformerLayerOptions options_;
};

class TransformerDecoderLayer : public Module {
 public:
  using Options = TransformerLayerOptions;
  TransformerDecoderLayer(std::int64_t d_model, std::int64_t nhead, const TransformerLayerOptions& options = {});
  // tgt [T, N, E] and memory [S, N, E] (batch_first: N first; unbatched: no N); tgt_mask
  // [T, T], memory_mask [T, S] (or per batch element and head); padding masks [N, T] and [N, S].
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false) const;
  std::string describe() const override;

  MultiHeadAttention self_attn, multihead_attn;
  Linear linear1;
  Dropout dropout;
  Linear linear2;
  LayerNorm norm1, norm2, norm3;
  Dropout dropout1, dropout2, dropout3;
  KILN_MODULE(TransformerDecoderLayer, self_attn, multihead_attn, linear1, dropout, linear2, norm1, norm2, norm3,
              dropout1, dropout2, dropout3)

 private:
  Tensor feed_forward(const Tensor& x) const;
  TransformerLayerOptions options_;
};

// num_layers deep copies of `layer` (as torch's clones: each starts from the same values), then
// the optional final norm.
class TransformerEncoder : public Module {
 public:
  TransformerEncoder(const TransformerEncoderLayer& layer, std::int64_t num_layers,
                     std::optional<LayerNorm> norm = std::nullopt);
  Tensor forward(const Tensor& src, const Tensor& mask = {}, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false) const;
  std::string describe() const override { return "num_layers=" + std::to_string(layers.size()); }

  ModuleList<TransformerEncoderLayer> layers;
  std::optional<LayerNorm> norm;
  KILN_MODULE(TransformerEncoder, layers, norm)
};

class TransformerDecoder : public Module {
 public:
  TransformerDecoder(const TransformerDecoderLayer& layer, std::int64_t num_layers,
                     std::optional<LayerNorm> norm = std::nullopt);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false) const;
  std::string describe() const override { return "num_layers=" + std::to_string(layers.size()); }

  ModuleList<TransformerDecoderLayer> layers;
  std::optional<LayerNorm> norm;
  KILN_MODULE(TransformerDecoder, layers, norm)
};

}  // namespace kiln::nn
