// The expressions of tests/data/gen_fusion.py (fusion.json holds PyTorch's values for them), by
// case name, with the ops each fuses into one kernel. The scheduler suite runs them on the CPU,
// the Vulkan suite on the GPU: both against PyTorch.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "kiln/engine/kiln.h"
#include "support/gelu_chain.h"

namespace kiln::test {

struct FusionCase {
  const char* name;
  std::uint64_t ops;  // ops in the one fused kernel
  std::function<Tensor(const std::vector<Tensor>&)> expr;
};

inline const std::vector<FusionCase>& fusion_cases() {
  static constexpr double kEps = 1e-5;
  static const std::vector<FusionCase> all = {
      {"sum_of_squares", 2, [](const std::vector<Tensor>& in) { return sum(mul(in[0], in[0]), {1}); }},
      {"variance_of_centred", 3,
       [](const std::vector<Tensor>& in) {
         Tensor d = sub(in[0], in[1]);
         return mean(mul(d, d), {1});
       }},
      {"rms_epilogue", 4,
       [](const std::vector<Tensor>& in) { return sqrt(add(mean(mul(in[0], in[0]), {0}), kEps)); }},
      {"logsumexp_manual", 5,  // the reshape is a view: no kernel, and it runs ahead of the group
       [](const std::vector<Tensor>& in) {
         Tensor s = sum(exp(sub(in[0], in[1])), {1});
         return add(log(std::move(s)), reshape(in[1], {5}));
       }},
      {"max_of_exp", 3, [](const std::vector<Tensor>& in) { return max(sub(exp(in[0]), 1.0), {1}); }},
      {"layernorm_var", 2,
       [](const std::vector<Tensor>& in) { return var(add(in[0], in[1]), {1}, /*correction=*/0.0); }},
      {"std_of_affine", 3, [](const std::vector<Tensor>& in) { return std(sub(mul(in[0], 2.0), 1.0), {0}); }},
      {"logsumexp_of_scaled", 2, [](const std::vector<Tensor>& in) { return logsumexp(mul(in[0], 0.5), {1}); }},
      {"attention_softmax", 3,
       [](const std::vector<Tensor>& in) { return softmax(add(mul(in[0], 0.125), in[1]), 1); }},
      {"log_softmax_columns", 2, [](const std::vector<Tensor>& in) { return log_softmax(sub(in[0], 1.0), 0); }},
      {"softmax_dropout", 3,  // a prologue and an epilogue
       [](const std::vector<Tensor>& in) { return mul(softmax(mul(in[0], 0.5), 1), in[1]); }},
      {"linear_relu", 3, [](const std::vector<Tensor>& in) { return relu(add(matmul(in[0], in[1]), in[2])); }},
      {"linear_gelu_residual", 8,
       [](const std::vector<Tensor>& in) { return add(gelu_chain(add(matmul(in[0], in[1]), in[2])), in[3]); }},
  };
  return all;
}

}  // namespace kiln::test
