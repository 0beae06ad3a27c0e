// kiln::nn's initializers (nn/init.h). torch's random stream cannot be matched, so the tests
// check what defines each distribution: fans, gains and the bound or std of every init against
// torch.nn.init's own helpers (tests/data/gen_nn_init.py); then, on large draws, that values
// respect the bound and that the sample mean and std are within 6 standard errors; and that
// orthogonal() is torch's Q (orthonormal rows or columns, R = Q^T A upper triangular with a
// positive diagonal).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "nn/functional_check.h"
#include "kiln/nn/init.h"

namespace kiln {
namespace {

using test::Json;
using test::RefCase;
using Matrix = std::vector<std::vector<double>>;
constexpr const char* kInitFile = "nn_init.json";

nn::Nonlinearity nonlinearity_named(const std::string& name) {
  static const std::map<std::string, nn::Nonlinearity> names{{"linear", nn::Nonlinearity::linear},
                                                             {"conv1d", nn::Nonlinearity::conv1d},
                                                             {"conv2d", nn::Nonlinearity::conv2d},
                                                             {"conv3d", nn::Nonlinearity::conv3d},
                                                             {"conv_transpose1d", nn::Nonlinearity::conv_transpose1d},
                                                             {"conv_transpose2d", nn::Nonlinearity::conv_transpose2d},
                                                             {"conv_transpose3d", nn::Nonlinearity::conv_transpose3d},
                                                             {"sigmoid", nn::Nonlinearity::sigmoid},
                                                             {"tanh", nn::Nonlinearity::tanh},
                                                             {"relu", nn::Nonlinearity::relu},
                                                             {"leaky_relu", nn::Nonlinearity::leaky_relu},
                                                             {"selu", nn::Nonlinearity::selu}};
  return names.at(name);
}

Shape shape_of(const Json& a) { return Shape(a.at("shape").get<std::vector<std::int64_t>>()); }

TEST(NnInit, FansMatchTorch) {
  const std::vector<RefCase> cases = test::cases_for(kInitFile, "fan");
  ASSERT_GE(cases.size(), 5u);
  for (const RefCase& c : cases) {
    const auto [fan_in, fan_out] = nn::fan_in_and_fan_out(shape_of(c.attrs));
    EXPECT_EQ(fan_in, c.attrs.at("fan_in").get<std::int64_t>()) << c.name;
    EXPECT_EQ(fan_out, c.attrs.at("fan_out").get<std::int64_t>()) << c.name;
  }
}

TEST(NnInit, GainsMatchTorch) {
  const std::vector<RefCase> cases = test::cases_for(kInitFile, "gain");
  ASSERT_GE(cases.size(), 15u);
  for (const RefCase& c : cases) {
    const nn::Nonlinearity nl = nonlinearity_named(c.attrs.at("nonlinearity"));
    const double gain =
        c.attrs.contains("param") ? nn::calculate_gain(nl, c.attrs.at("param")) : nn::calculate_gain(nl);
    EXPECT_NEAR(gain, c.attrs.at("gain").get<double>(), 1e-12) << c.name;
  }
}

struct Moments {
  double mean = 0, std = 0, max_abs = 0, within_one_std = 0;
};

Moments moments_of(const std::vector<float>& v, double sigma) {
  Moments m;
  for (float x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (float x : v) {
    m.std += (x - m.mean) * (x - m.mean);
    m.max_abs = std::max(m.max_abs, std::abs(static_cast<double>(x)));
    m.within_one_std += std::abs(x) < sigma ? 1.0 : 0.0;
  }
  m.std = std::sqrt(m.std / static_cast<double>(v.size() - 1));
  m.within_one_std /= static_cast<double>(v.size());
  return m;
}

Tensor draw(const Json& a, Generator& gen) {
  const std::string init = a.at("init");
  const Shape shape = shape_of(a);
  if (init == "kaiming_uniform" || init == "kaiming_normal") {
    const nn::FanMode mode = a.at("mode") == "fan_in" ? nn::FanMode::fan_in : nn::FanMode::fan_out;
    const nn::Nonlinearity nl = nonlinearity_named(a.at("nonlinearity"));
    return init == "kaiming_uniform" ? nn::kaiming_uniform(shape, a.at("a"), mode, nl, gen)
                                     : nn::kaiming_normal(shape, a.at("a"), mode, nl, gen);
  }
  return init == "xavier_uniform" ? nn::xavier_uniform(shape, a.at("gain"), gen)
                                  : nn::xavier_normal(shape, a.at("gain"), gen);
}

// Sample tolerances (n >= 70000 values): the mean within 6 sigma / sqrt(n); the std within
// 6 sqrt((kurtosis - 1) / 4n) relative, taking the normal's kurtosis 3 (the uniform's 1.8 is
// smaller); a normal's fraction within one std within 6 binomial standard errors of 0.6827.
TEST(NnInit, BoundsAndMomentsMatchTorchsFormulas) {
  const std::vector<RefCase> cases = test::cases_for(kInitFile, "init");
  ASSERT_GE(cases.size(), 14u);
  Generator gen(99);
  for (const RefCase& c : cases) {
    SCOPED_TRACE(c.name);
    const bool uniform = c.attrs.contains("bound");
    const double bound = uniform ? c.attrs.at("bound").get<double>() : 0.0;
    const double sigma = uniform ? bound / std::sqrt(3.0) : c.attrs.at("std").get<double>();
    const Tensor t = draw(c.attrs, gen);
    ASSERT_EQ(t.shape(), shape_of(c.attrs));
    const std::vector<float> v = t.to_vector<float>().get();
    const double n = static_cast<double>(v.size());
    const Moments m = moments_of(v, sigma);
    EXPECT_NEAR(m.mean, 0.0, 6 * sigma / std::sqrt(n));
    EXPECT_NEAR(m.std / sigma, 1.0, 6 * std::sqrt(0.5 / n));
    if (uniform) {
      EXPECT_LE(m.max_abs, bound * (1 + 1e-6));
      EXPECT_GT(m.max_abs, 0.999 * bound);
    } else {
      EXPECT_NEAR(m.within_one_std, 0.682689, 6 * std::sqrt(0.682689 * 0.317311 / n));
    }
  }
}

TEST(NnInit, UniformNormalAndConstant) {
  Generator gen(5);
  const std::vector<float> u = nn::uniform_init(Shape{1 << 16}, -0.5, 2.0, gen).to_vector<float>().get();
  for (float x : u) ASSERT_TRUE(x >= -0.5f && x <= 2.0f) << x;
  const Moments mu = moments_of(u, 1.0);
  EXPECT_NEAR(mu.mean, 0.75, 6 * (2.5 / std::sqrt(12.0)) / 256.0);
  const Moments mn = moments_of(nn::normal_init(Shape{1 << 16}, 3.0, 0.5, gen).to_vector<float>().get(), 1.0);
  EXPECT_NEAR(mn.mean, 3.0, 6 * 0.5 / 256.0);
  EXPECT_NEAR(mn.std / 0.5, 1.0, 6 * std::sqrt(0.5 / 65536.0));
  EXPECT_EQ(nn::constant(Shape{2, 3}, 0.25).to_vector<float>().get(), std::vector<float>(6, 0.25f));
  const Tensor i = nn::constant(Shape{2}, 7, TensorOptions{DType::i64});
  EXPECT_EQ(i.to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{7, 7}));
}

Matrix host_matrix(const Tensor& t, std::int64_t rows, std::int64_t cols, bool transpose) {
  const std::vector<float> v = t.to_vector<float>().get();
  Matrix m(transpose ? cols : rows, std::vector<double>(transpose ? rows : cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) (transpose ? m[c][r] : m[r][c]) = v[r * cols + c];
  return m;
}

// a^T b for a [m, p], b [m, q].
Matrix transposed_product(const Matrix& a, const Matrix& b) {
  Matrix out(a[0].size(), std::vector<double>(b[0].size(), 0.0));
  for (std::size_t k = 0; k < a.size(); ++k)
    for (std::size_t i = 0; i < a[0].size(); ++i)
      for (std::size_t j = 0; j < b[0].size(); ++j) out[i][j] += a[k][i] * b[k][j];
  return out;
}

// torch: Q of the QR of the [rows, cols] normal draw (transposed when wide), with R's diagonal
// made positive; W = Q, or Q^T when wide. Redrawing the same normal matrix from a generator with
// the same seed, Q^T A must be upper triangular with a positive diagonal (which fixes Q).
TEST(NnInit, OrthogonalIsTorchsSignCorrectedQ) {
  for (const Shape& shape : {Shape{6, 6}, Shape{8, 3}, Shape{3, 8}, Shape{4, 3, 2, 2}, Shape{1, 5}, Shape{40, 40}}) {
    for (double gain : {1.0, 2.0}) {
      SCOPED_TRACE(shape.str() + " gain " + std::to_string(gain));
      Generator gen(17), same(17);
      const Tensor w = nn::orthogonal(shape, gain, gen);
      ASSERT_EQ(w.shape(), shape);
      const std::int64_t rows = shape[0], cols = shape.numel() / rows;
      const bool wide = rows < cols;
      // Q [m, n] with m >= n: W itself, or W^T when wide.
      const Matrix q = host_matrix(w, rows, cols, wide);
      const Matrix qtq = transposed_product(q, q);
      for (std::size_t i = 0; i < qtq.size(); ++i)
        for (std::size_t j = 0; j < qtq.size(); ++j)
          ASSERT_NEAR(qtq[i][j], i == j ? gain * gain : 0.0, 1e-5 * gain * gain) << i << ", " << j;
      const Matrix a = host_matrix(normal(Shape{rows, cols}, 0.0, 1.0, same), rows, cols, wide);
      const Matrix r = transposed_product(q, a);
      for (std::size_t i = 0; i < r.size(); ++i) {
        EXPECT_GT(r[i][i], 0.1) << "R's diagonal must be positive";
        for (std::size_t j = 0; j < i; ++j) EXPECT_NEAR(r[i][j], 0.0, 1e-4 * gain) << "R[" << i << "][" << j << "]";
      }
    }
  }
}

TEST(NnInit, ZeroElementShapesAreEmpty) {
  EXPECT_EQ(nn::kaiming_uniform(Shape{0, 4}).numel(), 0);
  EXPECT_EQ(nn::xavier_normal(Shape{3, 0}).numel(), 0);
  EXPECT_EQ(nn::orthogonal(Shape{0, 3}).numel(), 0);
}

TEST(NnInitErrors, NameTheInitializerAndTheShape) {
  test::expect_error([] { nn::fan_in_and_fan_out(Shape{5}); }, "fan_in_and_fan_out", {"[5]"});
  test::expect_error([] { nn::kaiming_uniform(Shape{5}); }, "kaiming_uniform", {"[5]"});
  test::expect_error([] { nn::xavier_normal(Shape{}); }, "xavier_normal", {"[]"});
  test::expect_error([] { nn::orthogonal(Shape{4}); }, "orthogonal", {"[4]"});
  test::expect_error(
      [] {
        nn::kaiming_normal(Shape{2, 2}, 0, nn::FanMode::fan_in, nn::Nonlinearity::relu, default_generator(),
                           {DType::i64});
      },
      "kaiming_normal", {"i64"});
  test::expect_error([] { nn::uniform_init(Shape{2}, 1.0, 0.0); }, "uniform_init", {"low"});
  test::expect_error([] { nn::normal_init(Shape{2}, 0.0, -1.0); }, "normal_init", {"std"});
}

// Every initializer places its tensor on options.device with options.dtype.
class NnInitDevices : public ::testing::TestWithParam<Device> {};

TEST_P(NnInitDevices, LandOnTheDevice) {
  const TensorOptions on{DType::f32, GetParam()};
  Generator gen(3);
  for (const Tensor& t : {nn::kaiming_uniform(Shape{4, 3}, 0, nn::FanMode::fan_in, nn::Nonlinearity::relu, gen, on),
                          nn::kaiming_normal(Shape{4, 3}, 0, nn::FanMode::fan_in, nn::Nonlinearity::relu, gen, on),
                          nn::xavier_uniform(Shape{4, 3}, 1, gen, on), nn::xavier_normal(Shape{4, 3}, 1, gen, on),
                          nn::uniform_init(Shape{4, 3}, 0, 1, gen, on), nn::normal_init(Shape{4, 3}, 0, 1, gen, on),
                          nn::constant(Shape{4, 3}, 1, on), nn::orthogonal(Shape{4, 3}, 1, gen, on)}) {
    EXPECT_EQ(t.device(), GetParam());
    EXPECT_EQ(t.dtype(), DType::f32);
    EXPECT_EQ(t.shape(), (Shape{4, 3}));
    EXPECT_EQ(t.to_vector<float>().get().size(), 12u);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, NnInitDevices, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
