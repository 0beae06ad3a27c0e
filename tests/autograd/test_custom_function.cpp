// custom_function: a node whose backward is the caller's. Its gradients are checked against
// central differences of the forward function and against the same function built from kiln's
// ops (whose rules the rule suites check against PyTorch); wrong gradients returned by a custom
// backward are a clear error naming the function.
#include <gtest/gtest.h>

#include "kiln/autograd/autograd.h"
#include "support/reference.h"

namespace kiln {
namespace {

std::vector<float> values(const Tensor& t) { return t.to_vector<float>().get(); }

Tensor square_fn(const Tensor& x) {
  std::vector<Tensor> out = custom_function(
      {x}, [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mul(in[0], in[0])}; },
      [x = detach(x)](const std::vector<Tensor>& g) { return std::vector<Tensor>{mul(mul(g[0], x), 2.0)}; }, "square");
  return out[0];
}

// (a*b, a+b) as one node of two outputs.
std::vector<Tensor> product_and_sum(const Tensor& a, const Tensor& b) {
  return custom_function(
      {a, b},
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{mul(in[0], in[1]), add(in[0], in[1])};
      },
      [a = detach(a), b = detach(b)](const std::vector<Tensor>& g) {
        return std::vector<Tensor>{add(mul(g[0], b), g[1]), add(mul(g[0], a), g[1])};
      },
      "product_and_sum");
}

// d/dx_i of f(x) by central differences, one element at a time (f is a scalar function).
template <class F>
std::vector<double> finite_differences(const std::vector<float>& x, const Shape& shape, F f) {
  const double h = 1e-2;
  std::vector<double> grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::vector<float> up = x, down = x;
    up[i] += static_cast<float>(h);
    down[i] -= static_cast<float>(h);
    const double fu = values(f(from_vector(up, shape)))[0];
    const double fd = values(f(from_vector(down, shape)))[0];
    grad[i] = (fu - fd) / (2 * h);
  }
  return grad;
}

const Shape kShape{2, 3};
const std::vector<float> kX{0.5F, -1.25F, 2.0F, 0.75F, -0.3F, 1.6F};
const std::vector<float> kY{1.5F, 0.25F, -2.0F, 0.4F, 1.1F, -0.7F};
const std::vector<float> kSeed{1.0F, -2.0F, 0.5F, 3.0F, -1.5F, 0.25F};

TEST(CustomFunction, OneOutputMatchesFiniteDifferencesAndTheBuiltInOps) {
  const Tensor seed = from_vector(kSeed, kShape);
  const Tensor x = require_grad(from_vector(kX, kShape));
  const Tensor y = square_fn(x);
  EXPECT_TRUE(requires_grad(y));
  EXPECT_FALSE(is_leaf(y));
  EXPECT_TRUE(test::values_close(test::host_values(y), test::host_values(mul(x, x)), {}));
  const Gradients custom = backward(sum(mul(y, seed)));

  const Tensor x2 = require_grad(from_vector(kX, kShape));
  const Gradients builtin = backward(sum(mul(mul(x2, x2), seed)));
  EXPECT_TRUE(test::values_close(test::host_values(custom.get(x)), test::host_values(builtin.get(x2)), {}));

  const std::vector<double> fd =
      finite_differences(kX, kShape, [&](const Tensor& v) { return sum(mul(mul(v, v), seed)); });
  EXPECT_TRUE(test::values_close(test::host_values(custom.get(x)), fd, {.rtol = 1e-3, .atol = 1e-3}));
}

TEST(CustomFunction, TwoOutputsInsideAGraphMatchTheBuiltInOps) {
  const Tensor seed = from_vector(kSeed, kShape);
  auto loss_of = [&](const Tensor& x, const Tensor& y, bool custom) {
    // The custom node's inputs are made by recorded ops and its outputs feed more of them.
    const Tensor a = mul(x, 3.0), b = exp(y);
    std::vector<Tensor> out = custom ? product_and_sum(a, b) : std::vector<Tensor>{mul(a, b), add(a, b)};
    return sum(add(mul(out[0], seed), mul(square(out[1]), 0.5)));
  };
  const Tensor x = require_grad(from_vector(kX, kShape)), y = require_grad(from_vector(kY, kShape));
  const Gradients custom = backward(loss_of(x, y, true));
  const Tensor x2 = require_grad(from_vector(kX, kShape)), y2 = require_grad(from_vector(kY, kShape));
  const Gradients builtin = backward(loss_of(x2, y2, false));
  EXPECT_TRUE(test::values_close(test::host_values(custom.get(x)), test::host_values(builtin.get(x2)), {}));
  EXPECT_TRUE(test::values_close(test::host_values(custom.get(y)), test::host_values(builtin.get(y2)), {}));

  const Tensor yc = from_vector(kY, kShape);
  const std::vector<double> fd = finite_differences(kX, kShape, [&](const Tensor& v) { return loss_of(v, yc, true); });
  EXPECT_TRUE(test::values_close(test::host_values(custom.get(x)), fd, {.rtol = 1e-3, .atol = 1e-2}));
}

TEST(CustomFunction, AnOutputWithoutGradientGetsZeros) {
  const Tensor a = require_grad(from_vector(kX, kShape)), b = require_grad(from_vector(kY, kShape));
  std::vector<Tensor> out = product_and_sum(a, b);
  const Gradients g = backward(sum(out[0]));  // out[1] takes no part: its gradient is zeros
  EXPECT_TRUE(test::values_close(test::host_values(g.get(a)), test::host_values(from_vector(kY, kShape)), {}));
  EXPECT_TRUE(test::values_close(test::host_values(g.get(b)), test::host_values(from_vector(kX, kShape)), {}));
}

TEST(CustomFunction, WithoutGradientsItIsTheForwardFunction) {
  bool backward_made = false;
  auto run = [&](const Tensor& x) {
    return custom_function(
        {x}, [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mul(in[0], 2.0)}; },
        [&](const std::vector<Tensor>& g) {
          backward_made = true;
          return g;
        },
        "twice")[0];
  };
  EXPECT_FALSE(requires_grad(run(from_vector(kX, kShape))));
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(requires_grad(run(require_grad(from_vector(kX, kShape)))));
  }
  const Tensor y = run(require_grad(from_vector(kX, kShape)));
  EXPECT_TRUE(test::values_close(test::host_values(y), test::host_values(mul(from_vector(kX, kShape), 2.0)), {}));
  EXPECT_FALSE(backward_made);
}

// The kiln::Error thrown by backward through a custom function whose backward returns `grads`.
std::string error_of(std::function<std::vector<Tensor>(const Tensor&, const Tensor&)> grads) {
  const Tensor a = require_grad(from_vector(kX, kShape)), b = require_grad(from_vector(kY, kShape));
  const Tensor y = custom_function(
      {a, b}, [](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(in[0], in[1])}; },
      [&](const std::vector<Tensor>& g) { return grads(g[0], a); }, "bad_backward")[0];
  try {
    backward(sum(y));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(CustomFunction, WrongGradientsAreAClearError) {
  const std::string count = error_of([](const Tensor& g, const Tensor&) { return std::vector<Tensor>{g}; });
  EXPECT_NE(count.find("bad_backward"), std::string::npos) << count;
  EXPECT_NE(count.find("returned 1 gradients for 2 inputs"), std::string::npos) << count;

  const std::string shape = error_of([](const Tensor& g, const Tensor&) {
    return std::vector<Tensor>{g, sum(g, {1})};  // [2] for an input of [2, 3]
  });
  EXPECT_NE(shape.find("bad_backward"), std::string::npos) << shape;
  EXPECT_NE(shape.find("f32[2]"), std::string::npos) << shape;
  EXPECT_NE(shape.find("input #1 f32[2, 3]"), std::string::npos) << shape;

  // An undefined gradient means "none for this input": no error, and that input gets none.
  const std::string none = error_of([](const Tensor& g, const Tensor&) { return std::vector<Tensor>{g, Tensor{}}; });
  EXPECT_EQ(none, "no error");
}

}  // namespace
}  // namespace kiln
