// Layout ops on Vulkan against the CPU device's results (the CPU ops are verified against
// PyTorch in tests/ops): sizes that span many workgroups, every dtype, ranks up to kMaxRank
// (repeat doubles the copy's rank), negative and zero strides, pads that grow and crop, and
// tril/triu in place. Layout ops move bits, so every comparison is exact.
#include <random>

#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

using Make = std::function<Tensor(Device)>;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

Make random_tensor(Shape s, DType t, unsigned seed) {
  return [s, t, seed](Device d) {
    std::mt19937 rng(seed);
    const auto n = static_cast<std::size_t>(s.numel());
    switch (t) {
      case DType::f32: {
        std::uniform_real_distribution<float> u(-100.0f, 100.0f);
        std::vector<float> v(n);
        for (float& x : v) x = u(rng);
        if (n > 2) v[1] = -0.0f, v[2] = NAN;
        return from_vector(v, s, d);
      }
      case DType::i64: {
        std::vector<std::int64_t> v(n);
        for (auto& x : v) x = static_cast<std::int64_t>(rng()) * 65537 - (std::int64_t{1} << 40);
        return from_vector(v, s, d);
      }
      default: {
        std::vector<bool> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = (rng() & 3) == 0;
        return from_vector(v, s, d);
      }
    }
  };
}

const DType kLayoutDtypes[] = {DType::f32, DType::i64, DType::bool_};

TEST(VulkanLayout, PermuteEveryDtype) {
  KILN_REQUIRE_VULKAN();
  for (DType t : kLayoutDtypes) {
    const Make x = random_tensor(Shape{37, 64, 129}, t, 1);
    for (const std::vector<std::int64_t>& perm : {std::vector<std::int64_t>{2, 0, 1}, {1, 2, 0}, {0, 2, 1}, {2, 1, 0}})
      EXPECT_TRUE(same_as_cpu({x}, [&](const std::vector<Tensor>& v) { return permute(v[0], perm); }, {}))
          << dtype_name(t) << " perm " << perm[0] << perm[1] << perm[2];
  }
}

TEST(VulkanLayout, HighRankPermuteAndRepeat) {
  KILN_REQUIRE_VULKAN();
  const Make x = random_tensor(Shape{2, 3, 2, 5, 1, 3, 2, 7}, DType::f32, 2);
  EXPECT_TRUE(same_as_cpu({x},
                          [](const std::vector<Tensor>& v) {
                            return permute(v[0], {7, 3, 0, 5, 1, 6, 4, 2});
                          },
                          {}));
  // Every dim repeated: a copy of rank 16 with zero strides.
  EXPECT_TRUE(same_as_cpu({x},
                          [](const std::vector<Tensor>& v) {
                            return repeat(v[0], {2, 1, 3, 1, 2, 2, 1, 2});
                          },
                          {}));
  const Make y = random_tensor(Shape{33, 17}, DType::i64, 3);
  EXPECT_TRUE(same_as_cpu({y}, [](const std::vector<Tensor>& v) { return repeat(v[0], {3, 40, 5}); }, {}));
}

TEST(VulkanLayout, ExpandSliceFlip) {
  KILN_REQUIRE_VULKAN();
  for (DType t : kLayoutDtypes) {
    const Make col = random_tensor(Shape{300, 1, 7}, t, 4);
    EXPECT_TRUE(same_as_cpu({col}, [](const std::vector<Tensor>& v) { return expand(v[0], {4, 300, 129, 7}); }, {}));
    const Make x = random_tensor(Shape{90, 70, 50}, t, 5);
    EXPECT_TRUE(same_as_cpu(
        {x}, [](const std::vector<Tensor>& v) { return slice(slice(v[0], 0, 3, 88, 4), 2, 1, 50, 3); }, {}));
    EXPECT_TRUE(same_as_cpu({x}, [](const std::vector<Tensor>& v) { return flip(v[0], {0, 2}); }, {}));
    EXPECT_TRUE(same_as_cpu({x}, [](const std::vector<Tensor>& v) { return flip(v[0], {1}); }, {}));
  }
}

// More elements than one dispatch has threads (65535 groups of 256): the grid-stride loop.
TEST(VulkanLayout, CopyLargerThanOneGrid) {
  KILN_REQUIRE_VULKAN();
  std::vector<bool> col(4200);
  for (std::size_t i = 0; i < col.size(); ++i) col[i] = i % 3 == 1;
  const Tensor big = expand(from_vector(col, Shape{4200, 1}, vk0()), {4200, 4100});
  const std::vector<bool> got = big.to_vector<bool>().get();
  ASSERT_EQ(got.size(), 4200u * 4100u);
  for (std::size_t i = 0; i < got.size(); i += 997) ASSERT_EQ(got[i], col[i / 4100]) << i;
  ASSERT_EQ(got.back(), col.back());
}

TEST(VulkanLayout, CatAlongEveryDim) {
  KILN_REQUIRE_VULKAN();
  for (DType t : kLayoutDtypes) {
    for (int dim = 0; dim < 3; ++dim) {
      Shape a{40, 30, 20}, b = a, c = a, e = a;
      b[dim] = 7;
      c[dim] = 55;
      e[dim] = 0;
      EXPECT_TRUE(
          same_as_cpu({random_tensor(a, t, 6), random_tensor(b, t, 7), random_tensor(e, t, 8), random_tensor(c, t, 9)},
                      [dim](const std::vector<Tensor>& v) { return cat(v, dim); }, {}))
          << dtype_name(t) << " dim " << dim;
    }
  }
}

TEST(VulkanLayout, PadGrowsAndCrops) {
  KILN_REQUIRE_VULKAN();
  for (DType t : kLayoutDtypes) {
    const Make x = random_tensor(Shape{6, 50, 70}, t, 10);
    EXPECT_TRUE(same_as_cpu({x}, [](const std::vector<Tensor>& v) { return pad(v[0], {3, 5, 0, 2, 1, 1}, 1.0); }, {}));
    EXPECT_TRUE(same_as_cpu({x}, [](const std::vector<Tensor>& v) { return pad(v[0], {-4, 9, 2, -10}, 0.0); }, {}));
    EXPECT_TRUE(same_as_cpu({x}, [](const std::vector<Tensor>& v) { return pad(v[0], {-70, 3}, 1.0); }, {}));
    const Make empty = random_tensor(Shape{4, 0}, t, 11);
    EXPECT_TRUE(same_as_cpu({empty}, [](const std::vector<Tensor>& v) { return pad(v[0], {2, 3}, 1.0); }, {}));
  }
}

TEST(VulkanLayout, TrilTriuInPlace) {
  KILN_REQUIRE_VULKAN();
  for (DType t : kLayoutDtypes) {
    for (std::int64_t k : {-300, -5, 0, 3, 400}) {
      const Make x = random_tensor(Shape{3, 130, 257}, t, 12);
      EXPECT_TRUE(same_as_cpu({x}, [k](const std::vector<Tensor>& v) { return tril(v[0], k); }, {}));
      EXPECT_TRUE(same_as_cpu({x}, [k](const std::vector<Tensor>& v) { return triu(v[0], k); }, {}));
    }
  }
  // Handed over: the kernel runs on the input's own buffer.
  std::vector<float> ones_v(64 * 64, 1.0f);
  Tensor m = from_vector(ones_v, Shape{64, 64}, vk0());
  const std::vector<float> got = tril(std::move(m), -1).to_vector<float>().get();
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) ASSERT_EQ(got[i * 64 + j], j <= i - 1 ? 1.0f : 0.0f) << i << "," << j;
}

}  // namespace
}  // namespace kiln::test
