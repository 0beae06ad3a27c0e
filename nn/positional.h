// Positional encodings: where each element of a sequence sits, added to its features
// (sinusoidal, learned) or turned into a rotation of the queries and keys (rotary).
//
//   nn::SinusoidalPositionalEncoding pos(512);    // x [..., seq, 512] -> x + pe[:seq]
//   nn::RotaryEmbedding rope(64);                 // q, k [N, heads, seq, 64]
//   Tensor y = nn::scaled_dot_product_attention(rope(q), rope(k), v, {.is_causal = true});
//
// Each forward takes an offset: the position of the sequence's first element (decoding one
// token at a time after `offset` earlier ones).
#pragma once

#include "kiln/nn/module.h"

namespace kiln::nn {

// Where a positional encoding's table starts (the sizes come before it).
struct PositionalEncodingOptions {
  Device device = Device::cpu();
};

// "Attention is all you need": pe[pos, 2i] = sin(pos / 10000^(2i / d_model)) and pe[pos, 2i + 1]
// = cos(the same angle), for odd d_model too. torch has no such module; the table is the Buffer
// "pe", [max_len, d_model], as PyTorch's tutorial names it (the tutorial keeps it as
// [max_len, 1, d_model]: reshape when loading its weights). Computed on the host in double
// precision, so each entry is the f32 nearest the exact value.
class SinusoidalPositionalEncoding : public Module {
 public:
  using Options = PositionalEncodingOptions;
  explicit SinusoidalPositionalEncoding(std::int64_t d_model, std::int64_t max_len = 5000,
                                        const PositionalEncodingOptions& options = {});
  // x [..., seq, d_model] plus rows offset .. offset + seq of the table.
  Tensor forward(const Tensor& x, std::int64_t offset = 0) const;
  std::string describe() const override;

  Buffer pe;
  KILN_MODULE(SinusoidalPositionalEncoding, pe)
};

// A learned row per position: the Parameter "weight" [max_len, d_model], drawn N(0, 1) as
// torch's nn.Embedding is (the module is an embedding looked up at positions offset, offset+1,
// ...; its state_dict is an nn.Embedding's).
class LearnedPositionalEncoding : public Module {
 public:
  using Options = PositionalEncodingOptions;
  LearnedPositionalEncoding(std::int64_t max_len, std::int64_t d_model, const PositionalEncodingOptions& options = {});
  // x [..., seq, d_model] plus rows offset .. offset + seq of weight.
  Tensor forward(const Tensor& x, std::int64_t offset = 0) const;
  std::string describe() const override;

  Parameter weight;
  KILN_MODULE(LearnedPositionalEncoding, weight)
};

// Rotary position embedding (RoPE) in the GPT-NeoX / LLaMA convention: the head's features are
// split in halves x1 = x[..., :d/2], x2 = x[..., d/2:], and pair k (x1[k], x2[k]) is rotated by
// pos * base^(-2k/d): out = [x1 cos - x2 sin, x2 cos + x1 sin]. (GPT-J and Meta's LLaMA code
// rotate interleaved pairs (x[2k], x[2k+1]) instead: permute the projection rows to convert.)
// No state: the angles are computed for each call, on the input's device, in f32 from
// frequencies rounded once from double.
struct RotaryEmbeddingOptions {
  double base = 10000.0;  // the angle of pair k at position pos is pos * base^(-2k/d)
};

class RotaryEmbedding : public Module {
 public:
  using Options = RotaryEmbeddingOptions;
  explicit RotaryEmbedding(std::int64_t head_dim, const RotaryEmbeddingOptions& options = {});
  // x [..., seq, head_dim] (queries or keys, any leading dims), positions offset .. offset + seq.
  Tensor forward(const Tensor& x, std::int64_t offset = 0) const;
  std::string describe() const override;
  std::int64_t head_dim() const { return head_dim_; }

  KILN_MODULE(RotaryEmbedding)

 private:
  std::int64_t head_dim_;
  double base_;
  std::vector<float> inv_freq_;  // base^(-2k / head_dim), k < head_dim / 2
};

}  // namespace kiln::nn
