// Affine layers and lookups: Linear, Bilinear, Embedding, and the shape helpers Identity and
// Flatten. Each starts from PyTorch's default initialization (drawn from kiln's default
// generator: seed it with kiln::manual_seed), so a model written in both starts from the same
// distribution.
#pragma once
#include <optional>

#include "kiln/nn/module.h"

namespace kiln::nn {

// Linear's and Bilinear's settings.
struct LinearOptions {
  bool bias = true;
  Device device = Device::cpu();
};

// y = x Wᵀ + b over the last dim. weight [out, in], bias [out].
class Linear : public Module {
 public:
  using Options = LinearOptions;
  Linear(std::int64_t in_features, std::int64_t out_features, const LinearOptions& options = {});
  // By value: an input handed over (Sequential hands each layer's over) is consumed by the product.
  Tensor forward(Tensor x) const;
  std::string describe() const override;
  std::int64_t in_features() const { return weight.shape()[1]; }
  std::int64_t out_features() const { return weight.shape()[0]; }

  Parameter weight, bias;
  KILN_MODULE(Linear, weight, bias)
};

// y_k = x1ᵀ W_k x2 + b_k. weight [out, in1, in2], bias [out].
class Bilinear : public Module {
 public:
  using Options = LinearOptions;
  Bilinear(std::int64_t in1_features, std::int64_t in2_features, std::int64_t out_features,
           const LinearOptions& options = {});
  Tensor forward(const Tensor& x1, const Tensor& x2) const;
  std::string describe() const override;

  Parameter weight, bias;
  KILN_MODULE(Bilinear, weight, bias)
};

struct EmbeddingOptions {
  std::optional<std::int64_t> padding_idx;  // a row that starts at zero and takes no gradient
  Device device = Device::cpu();
};

// Rows of `weight` [num_embeddings, dim] picked by i64 indices.
class Embedding : public Module {
 public:
  using Options = EmbeddingOptions;
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, const EmbeddingOptions& options = {});
  Tensor forward(const Tensor& indices) const;
  std::string describe() const override;

  Parameter weight;
  KILN_MODULE(Embedding, weight)

 private:
  std::optional<std::int64_t> padding_idx_;
};

class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) const { return x; }
  KILN_MODULE(Identity)
};

// Flattens dims start_dim..end_dim into one (torch.nn.Flatten: from dim 1 by default).
class Flatten : public Module {
 public:
  explicit Flatten(std::int64_t start_dim = 1, std::int64_t end_dim = -1) : start_(start_dim), end_(end_dim) {}
  Tensor forward(const Tensor& x) const;
  std::string describe() const override;
  KILN_MODULE(Flatten)

 private:
  std::int64_t start_, end_;
};

}  // namespace kiln::nn
