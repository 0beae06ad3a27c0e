// linear, bilinear and embedding: products and lookups on a layer's weight, written with
// matmul and index_select so that the weight's gradient comes from their backward rules.
#include <string>

#include "kiln/autograd/autograd.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/functional_detail.h"

namespace kiln::nn {

Tensor linear(Tensor x, Tensor weight, Tensor bias) {
  detail::check_float("linear", "input", x);
  detail::check_float("linear", "weight", weight);
  KILN_CHECK(weight.rank() == 2, "linear", "weight must be [out_features, in_features], got " + weight.shape().str());
  KILN_CHECK(x.rank() >= 1 && x.size(-1) == weight.size(1), "linear",
             "input " + x.shape().str() + " must end in in_features = " + std::to_string(weight.size(1)) + " (weight " +
                 weight.shape().str() + ")");
  if (bias.defined())
    KILN_CHECK(bias.rank() == 1 && bias.size(0) == weight.size(0), "linear",
               "bias must be [" + std::to_string(weight.size(0)) + "] (weight " + weight.shape().str() + "), got " +
                   bias.shape().str());
  Tensor y = matmul(std::move(x), std::move(weight), {.transpose_b = true});  // x Wᵀ, read in place where it can be
  // The bias add becomes the matmul's epilogue (one kernel).
  return bias.defined() ? add(std::move(y), std::move(bias)) : y;
}

Tensor bilinear(Tensor x1, Tensor x2, Tensor weight, Tensor bias) {
  const char* op = "bilinear";
  detail::check_float(op, "input1", x1);
  detail::check_float(op, "input2", x2);
  detail::check_float(op, "weight", weight);
  KILN_CHECK(weight.rank() == 3, op, "weight must be [out, in1, in2], got " + weight.shape().str());
  const std::int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  const std::string shapes =
      "input1 " + x1.shape().str() + ", input2 " + x2.shape().str() + ", weight " + weight.shape().str();
  KILN_CHECK(x1.rank() >= 1 && x1.rank() == x2.rank() && x1.size(-1) == in1 && x2.size(-1) == in2, op,
             "inputs must be [..., in1] and [..., in2] with the same leading dims: " + shapes);
  Shape lead = x1.shape();
  lead.erase(lead.rank() - 1);
  for (int d = 0; d < lead.rank(); ++d)
    KILN_CHECK(x2.size(d) == lead[d], op, "inputs must have the same leading dims: " + shapes);
  if (bias.defined())
    KILN_CHECK(bias.rank() == 1 && bias.size(0) == out, op,
               "bias must be [" + std::to_string(out) + "], got " + bias.shape().str());

  // One product does every output's left multiplication: x1 [B, in1] times weight as
  // [in1, out * in2] gives x1 W_k for every k; the right one is a multiply and a sum over in2.
  const std::int64_t batch = lead.numel();
  Tensor left =
      matmul(reshape(std::move(x1), {batch, in1}), reshape(permute(std::move(weight), {1, 0, 2}), {in1, out * in2}));
  Tensor right = reshape(std::move(x2), {batch, 1, in2});
  Tensor y = sum(mul(reshape(std::move(left), {batch, out, in2}), std::move(right)), {2});
  if (bias.defined()) y = add(std::move(y), std::move(bias));
  std::vector<std::int64_t> out_shape = lead.to_vector();
  out_shape.push_back(out);
  return reshape(std::move(y), out_shape);
}

Tensor embedding(Tensor indices, Tensor weight, std::optional<std::int64_t> padding_idx) {
  const char* op = "embedding";
  KILN_CHECK(indices.defined() && indices.dtype() == DType::i64, op,
             "indices must be an i64 tensor, got " +
                 (indices.defined() ? std::string(dtype_name(indices.dtype())) : std::string("undefined")));
  detail::check_float(op, "weight", weight);
  KILN_CHECK(weight.rank() == 2, op, "weight must be [num_embeddings, embedding_dim], got " + weight.shape().str());
  const std::int64_t rows = weight.size(0), dim = weight.size(1);
  if (padding_idx) {
    KILN_CHECK(
        *padding_idx >= -rows && *padding_idx < rows, op,
        "padding_idx " + std::to_string(*padding_idx) + " must be within num_embeddings " + std::to_string(rows));
    if (*padding_idx < 0) *padding_idx += rows;
  }
  std::vector<std::int64_t> out_shape = indices.shape().to_vector();
  out_shape.push_back(dim);
  Tensor flat = reshape(indices, {indices.numel()});
  Tensor rows_picked = reshape(index_select(std::move(weight), 0, std::move(flat)), out_shape);
  if (!padding_idx) return rows_picked;
  // The padding row keeps its value but passes no gradient: where() takes it from a detached
  // handle to the same values, so index_select's backward adds zeros for it.
  Tensor is_padding = unsqueeze(eq(std::move(indices), static_cast<double>(*padding_idx)), -1);
  Tensor frozen = detach(rows_picked);
  return where(std::move(is_padding), std::move(frozen), std::move(rows_picked));
}

}  // namespace kiln::nn
