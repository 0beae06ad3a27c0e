// The reduce family on Vulkan against the CPU device's result (the CPU ops are verified against
// PyTorch in tests/ops), on shapes that take every kernel path of devices/vulkan/vk_reduce*.cpp:
// a workgroup per row, a thread per column, rows and columns split across workgroups (with the
// combine by thread and by workgroup), short rows, non-adjacent reduced dims (gather) and empty
// extents. Integer and bool results must be identical; f32 results agree within the stated
// tolerances (sums in another order; exp and log are the driver's).
#include <cmath>
#include <cstdint>

#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

using Make = std::function<Tensor(Device)>;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

constexpr Tol kExact{0, 0};
constexpr Tol kSum{1e-5, 1e-3};   // f32 sums of thousands of values, summed in another order
constexpr Tol kStat{1e-4, 1e-5};  // var/std: f32 Welford against the CPU's f64 two passes
constexpr Tol kExp{2e-5, 1e-6};   // logsumexp, softmax: the driver's exp and log

std::uint32_t hash(std::uint64_t i) {
  i = (i ^ (i >> 31)) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::uint32_t>((i ^ (i >> 29)) >> 7);
}

// Multiples of 1/64 in [-15.6, 15.6] (with repeats, so arg ties happen), NaN where asked.
Make reduce_floats(Shape s, std::vector<std::int64_t> nan_at = {}) {
  return [s, nan_at](Device d) {
    std::vector<float> v(static_cast<std::size_t>(s.numel()));
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(static_cast<int>(hash(i) % 2001) - 1000) / 64.0f;
    for (std::int64_t k : nan_at) v[static_cast<std::size_t>(k)] = NAN;
    return from_vector(v, s, d);
  };
}
// Values near 1, for products that neither overflow nor vanish.
Make near_one(Shape s) {
  return [s](Device d) {
    std::vector<float> v(static_cast<std::size_t>(s.numel()));
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = 1.0f + static_cast<float>(static_cast<int>(hash(i) % 201) - 100) * 1e-4f;
    return from_vector(v, s, d);
  };
}
Make ints(Shape s) {
  return [s](Device d) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(s.numel()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(hash(i) % 100001) - 50000;
    return from_vector(v, s, d);
  };
}
Make bools(Shape s, std::uint32_t one_in) {
  return [s, one_in](Device d) {
    std::vector<bool> v(static_cast<std::size_t>(s.numel()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = hash(i) % one_in == 0;
    return from_vector(v, s, d);
  };
}

// Shapes and dims that take each path (see vk_reduce_driver.cpp for the thresholds).
struct Path {
  const char* name;
  Shape shape;
  Dims dims;
};
const Path kPaths[] = {
    {"rows", {1100, 300}, {1}},  // a workgroup per row
    {"rows split, thread combine", {3, 50000}, {1}},
    {"rows split, group combine", {200000}, {}},
    {"cols", {2, 3, 33000}, {1}},  // a thread per column
    {"cols split, thread combine", {1000, 7}, {0}},
    {"cols split, group combine", {2, 5000, 7}, {1}},
    {"short rows", {1000, 10}, {1}},
    {"gather", {30, 40, 50}, {0, 2}},
    {"keepdim all", {7, 9, 11}, {0, 1, 2}},
};

TEST(VulkanReduce, SumsMatchTheCpuOnEveryPath) {
  KILN_REQUIRE_VULKAN();
  for (const Path& p : kPaths) {
    SCOPED_TRACE(p.name);
    const Dims dims = p.dims;
    EXPECT_TRUE(same_as_cpu(
        {reduce_floats(p.shape)}, [&](const std::vector<Tensor>& x) { return sum(x[0], dims); }, kSum));
    EXPECT_TRUE(same_as_cpu(
        {reduce_floats(p.shape)}, [&](const std::vector<Tensor>& x) { return mean(x[0], dims, true); }, kSum));
    EXPECT_TRUE(same_as_cpu(
        {ints(p.shape)}, [&](const std::vector<Tensor>& x) { return sum(x[0], dims); }, kExact));
    EXPECT_TRUE(same_as_cpu(
        {bools(p.shape, 3)}, [&](const std::vector<Tensor>& x) { return sum(x[0], dims); }, kExact));
    EXPECT_TRUE(same_as_cpu({near_one(p.shape)}, [&](const std::vector<Tensor>& x) { return prod(x[0], dims); },
                            {1e-4, 1e-30}));
  }
}

TEST(VulkanReduce, ExtremaAndTruthMatchTheCpuOnEveryPath) {
  KILN_REQUIRE_VULKAN();
  for (const Path& p : kPaths) {
    SCOPED_TRACE(p.name);
    const Dims dims = p.dims;
    for (const Make& m :
         {reduce_floats(p.shape), reduce_floats(p.shape, {p.shape.numel() / 2, p.shape.numel() - 1}), ints(p.shape)}) {
      EXPECT_TRUE(same_as_cpu(
          {m}, [&](const std::vector<Tensor>& x) { return max(x[0], dims); }, kExact));
      EXPECT_TRUE(same_as_cpu(
          {m}, [&](const std::vector<Tensor>& x) { return min(x[0], dims); }, kExact));
    }
    // Rare trues and rare falses, so that the answer depends on single elements.
    for (const Make& m : {bools(p.shape, 997), reduce_floats(p.shape)}) {
      EXPECT_TRUE(same_as_cpu(
          {m}, [&](const std::vector<Tensor>& x) { return any(x[0], dims); }, kExact));
      EXPECT_TRUE(same_as_cpu(
          {m}, [&](const std::vector<Tensor>& x) { return all(x[0], dims); }, kExact));
      EXPECT_TRUE(same_as_cpu(
          {m}, [&](const std::vector<Tensor>& x) { return max(x[0], dims); }, kExact));
    }
  }
}

TEST(VulkanReduce, StatisticsMatchTheCpuOnEveryPath) {
  KILN_REQUIRE_VULKAN();
  for (const Path& p : kPaths) {
    SCOPED_TRACE(p.name);
    const Dims dims = p.dims;
    EXPECT_TRUE(same_as_cpu(
        {reduce_floats(p.shape)}, [&](const std::vector<Tensor>& x) { return var(x[0], dims); }, kStat));
    EXPECT_TRUE(same_as_cpu(
        {reduce_floats(p.shape)}, [&](const std::vector<Tensor>& x) { return kiln::std(x[0], dims, 0.0); }, kStat));
    EXPECT_TRUE(same_as_cpu(
        {reduce_floats(p.shape)}, [&](const std::vector<Tensor>& x) { return logsumexp(x[0], dims); }, kExp));
    EXPECT_TRUE(same_as_cpu(
        {reduce_floats(p.shape, {3})}, [&](const std::vector<Tensor>& x) { return logsumexp(x[0], dims); }, kExp));
    EXPECT_TRUE(same_as_cpu(
        {ints(p.shape)}, [&](const std::vector<Tensor>& x) { return logsumexp(x[0], dims); }, kExp));
  }
}

// argmax/argmin and the along-dim ops take one dim: the last one (rows), the first (columns).
struct DimPath {
  const char* name;
  Shape shape;
  std::int64_t dim;
};
const DimPath kDimPaths[] = {
    {"rows", {300, 1000}, 1},
    {"long rows", {20, 3000}, 1},  // unsplit, several vec4 steps per thread in one workgroup
    {"rows split", {2, 20000}, 1},
    {"cols", {50, 30, 20}, 1},
    {"cols split", {3000, 4}, 0},
    {"cols split, thread combine", {600, 5}, 0},
    {"short rows", {500, 12}, 1},
};

TEST(VulkanReduce, ArgExtremaFindTheFirstBestOnEveryPath) {
  KILN_REQUIRE_VULKAN();
  for (const DimPath& p : kDimPaths) {
    SCOPED_TRACE(p.name);
    const std::int64_t dim = p.dim, n = p.shape.numel();
    // Values repeat (ties) and two NaN far apart: the first NaN is the answer of its slice.
    for (const Make& m : {reduce_floats(p.shape), reduce_floats(p.shape, {n / 3, n / 3 + 1, n - 2}), ints(p.shape)}) {
      EXPECT_TRUE(same_as_cpu(
          {m}, [&](const std::vector<Tensor>& x) { return argmax(x[0], dim); }, kExact));
      EXPECT_TRUE(same_as_cpu(
          {m}, [&](const std::vector<Tensor>& x) { return argmin(x[0], dim, true); }, kExact));
      EXPECT_TRUE(same_as_cpu(
          {m}, [&](const std::vector<Tensor>& x) { return argmax(x[0]); }, kExact));
    }
  }
}

TEST(VulkanReduce, SoftmaxMatchesTheCpuOnEveryPath) {
  KILN_REQUIRE_VULKAN();
  for (const DimPath& p : kDimPaths) {
    SCOPED_TRACE(p.name);
    const std::int64_t dim = p.dim;
    for (const Make& m : {reduce_floats(p.shape), reduce_floats(p.shape, {5})}) {
      EXPECT_TRUE(same_as_cpu(
          {m}, [&](const std::vector<Tensor>& x) { return softmax(x[0], dim); }, kExp));
      EXPECT_TRUE(same_as_cpu(
          {m}, [&](const std::vector<Tensor>& x) { return log_softmax(x[0], dim); }, kExp));
    }
  }
}

TEST(VulkanReduce, CumsumMatchesTheCpuOnEveryPath) {
  KILN_REQUIRE_VULKAN();
  const DimPath paths[] = {
      {"rows", {100, 3000}, 1},
      {"rows split", {40000}, 0},
      {"cols", {300, 50}, 0},
      {"short rows", {400, 9}, 1},
  };
  for (const DimPath& p : paths) {
    SCOPED_TRACE(p.name);
    const std::int64_t dim = p.dim;
    EXPECT_TRUE(same_as_cpu(
        {reduce_floats(p.shape)}, [&](const std::vector<Tensor>& x) { return cumsum(x[0], dim); }, kSum));
    EXPECT_TRUE(same_as_cpu(
        {ints(p.shape)}, [&](const std::vector<Tensor>& x) { return cumsum(x[0], dim); }, kExact));
    EXPECT_TRUE(same_as_cpu(
        {bools(p.shape, 2)}, [&](const std::vector<Tensor>& x) { return cumsum(x[0], dim); }, kExact));
  }
}

TEST(VulkanReduce, EmptyExtentsGiveTheIdentity) {
  KILN_REQUIRE_VULKAN();
  const Make empty = [](Device d) { return zeros(Shape{0, 5}, {DType::f32, d}); };
  for (const Fn& f : std::vector<Fn>{[](const std::vector<Tensor>& x) { return sum(x[0], {0}); },
                                     [](const std::vector<Tensor>& x) { return prod(x[0], {0}); },
                                     [](const std::vector<Tensor>& x) { return mean(x[0], {0}); },
                                     [](const std::vector<Tensor>& x) { return var(x[0], {0}); },
                                     [](const std::vector<Tensor>& x) { return logsumexp(x[0], {0}); },
                                     [](const std::vector<Tensor>& x) { return any(x[0], {0}); },
                                     [](const std::vector<Tensor>& x) { return all(x[0], {0}); },
                                     [](const std::vector<Tensor>& x) { return sum(x[0], {1}); },
                                     [](const std::vector<Tensor>& x) { return softmax(x[0], 0); },
                                     [](const std::vector<Tensor>& x) { return cumsum(x[0], 1); }})
    EXPECT_TRUE(same_as_cpu({empty}, f, kExact));
}

TEST(VulkanReduce, SplitResultsAreTheSameEveryRun) {
  KILN_REQUIRE_VULKAN();
  Tensor x = reduce_floats(Shape{200000})(vk0());
  const std::vector<float> first = sum(x).to_vector<float>().get();
  Tensor rows = reduce_floats(Shape{2, 100000})(vk0());
  const std::vector<float> sm = softmax(rows, 1).to_vector<float>().get();
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(sum(x).to_vector<float>().get(), first);
    EXPECT_EQ(softmax(rows, 1).to_vector<float>().get(), sm);
  }
}

}  // namespace
}  // namespace kiln::test
