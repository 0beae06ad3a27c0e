// Autograd through f16 and bf16 models on Vulkan against PyTorch (tests/data/gen_grad_half.py):
// a linear layer with GELU and a cross entropy, a layer norm, an attention head, an embedding
// lookup with a gather, and a 16-bit product plus an f32 bias (whose f32 gradient goes back to
// the 16-bit weights as 16 bits, as PyTorch's engine casts it). Forward and backward run in the 16-bit dtype (each op rounds once, the
// reductions and products accumulate in f32); every gradient has its parameter's dtype and lies
// within a bound of PyTorch's float64 gradient at the same inputs, relative to the largest one:
// 2^-8 for f16, 2^-5 for bf16, four units in the last place of the dtype (each op of a chain of
// about a dozen rounds by up to half a unit; on lavapipe the largest errors were 0.95e-3 for
// f16 and 5.8e-3 for bf16, 4x and 5x below the bounds). A gradient flowing through a wrong
// rule, a missing term or a dtype lost on the way is off by far more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kiln/autograd/autograd.h"
#include "devices/vulkan/vulkan_test_support.h"

namespace kiln {
namespace {

using test::Json;
using test::RefCase;

// max |got - want| / max |want|: the error relative to the gradient's scale.
double scaled_error(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return scale > 0 ? err / scale : err;
}

double bound(DType t) { return t == DType::f16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -5); }

// The model of each case on its tensors (leaves where the case asks for their gradients).
Tensor loss_of(const std::string& model, const std::vector<Tensor>& in) {
  if (model == "mlp_xent") {
    const Tensor logits = add(matmul(gelu(add(matmul(in[0], in[1]), in[2])), in[3]), in[4]);
    return neg(mean(sum(mul(log_softmax(logits, -1), in[5]), {1})));
  }
  if (model == "layer_norm") {
    const Tensor mu = mean(in[0], {1}, true);
    const Tensor inv = rsqrt(add(var(in[0], {1}, 0.0, true), 1e-5));
    return sum(mul(add(mul(mul(sub(in[0], mu), inv), in[1]), in[2]), in[3]));
  }
  if (model == "attention") {
    const Tensor p = softmax(mul(matmul(in[0], transpose(in[1], 0, 1)), 0.25), -1);
    return sum(mul(matmul(p, in[2]), in[3]));
  }
  if (model == "mixed") return mean(square(add(matmul(in[0], in[1]), in[2])));  // f32 bias: an f32 sum
  if (model == "lookup") {
    return add(sum(square(index_select(in[0], 0, in[1]))), sum(mul(gather(in[2], 1, in[3]), 3.0)));
  }
  throw std::runtime_error("no model " + model);
}

TEST(VulkanHalfGradients, ModelsMatchPyTorch) {
  KILN_REQUIRE_VULKAN();
  std::size_t ran = 0;
  for (const RefCase& c : test::load_cases("grad_half.json")) {
    SCOPED_TRACE(c.name);
    const std::vector<std::size_t> wanted = c.attrs.at("grads").get<std::vector<std::size_t>>();
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < c.inputs.size(); ++i) {
      Tensor t = test::make_tensor(c.inputs[i], test::vk0());
      if (std::find(wanted.begin(), wanted.end(), i) != wanted.end()) t = require_grad(t);
      in.push_back(t);
    }
    const DType dtype = in[0].dtype();
    ASSERT_TRUE(dtype == DType::f16 || dtype == DType::bf16);
    const Tensor loss = loss_of(c.op, in);
    EXPECT_EQ(loss.dtype(), c.op == "mixed" ? DType::f32 : dtype);
    const Gradients g = backward(loss);
    ASSERT_EQ(c.outputs.size(), wanted.size());
    for (std::size_t k = 0; k < wanted.size(); ++k) {
      SCOPED_TRACE("gradient of input " + std::to_string(wanted[k]));
      const Tensor grad = g.get(in[wanted[k]]);
      EXPECT_EQ(grad.dtype(), in[wanted[k]].dtype());
      EXPECT_EQ(grad.shape(), in[wanted[k]].shape());
      const std::vector<float> got = cast(grad, DType::f32).to_vector<float>().get();
      const std::vector<double> want = test::json_values(c.outputs[k]);
      ASSERT_EQ(got.size(), want.size());
      const double err = scaled_error(got, want);
      EXPECT_LE(err, bound(dtype)) << "error " << err << " of the largest gradient";
    }
    ++ran;
  }
  EXPECT_EQ(ran, 10u);
}

}  // namespace
}  // namespace kiln
