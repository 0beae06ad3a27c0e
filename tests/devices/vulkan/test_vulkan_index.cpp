// Index ops on Vulkan against the CPU device's results (the CPU ops are verified against
// PyTorch in tests/ops): sizes that span many workgroups, every dtype, scatter_add with many
// duplicates (the Vulkan kernel adds in index order like the CPU, so even f32 sums are exact),
// sort and topk on slices that sort in shared memory and on longer ones that take the global
// path, with ties, NaN and signed zeros, in place; index errors that reach dependent futures.
#include <limits>
#include <random>

#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

using Make = std::function<Tensor(Device)>;

Make index_floats(Shape s, unsigned seed, int distinct = 0) {
  return [s, seed, distinct](Device d) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-50.0f, 50.0f);
    std::vector<float> v(static_cast<std::size_t>(s.numel()));
    // `distinct` > 0: few values, so that sorts meet many ties.
    for (float& x : v) x = distinct ? static_cast<float>(static_cast<int>(rng() % distinct) - distinct / 2) : u(rng);
    for (std::size_t i = 0; i < v.size(); i += 37) v[i] = NAN;
    for (std::size_t i = 5; i < v.size(); i += 41) v[i] = -0.0f;
    for (std::size_t i = 9; i < v.size(); i += 43) v[i] = 0.0f;
    for (std::size_t i = 11; i < v.size(); i += 101) v[i] = -INFINITY;
    return from_vector(v, s, d);
  };
}
Make ints(Shape s, unsigned seed, std::int64_t lo, std::int64_t hi) {
  return [s, seed, lo, hi](Device d) {
    std::mt19937_64 rng(seed);
    std::vector<std::int64_t> v(static_cast<std::size_t>(s.numel()));
    for (auto& x : v) x = lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo));
    return from_vector(v, s, d);
  };
}
Make bools(Shape s, unsigned seed) {
  return [s, seed](Device d) {
    std::mt19937 rng(seed);
    std::vector<bool> v(static_cast<std::size_t>(s.numel()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = (rng() & 1) != 0;
    return from_vector(v, s, d);
  };
}
Make of_dtype(DType t, Shape s, unsigned seed) {
  if (t == DType::f32) return index_floats(s, seed);
  if (t == DType::i64) return ints(s, seed, -(std::int64_t{1} << 50), std::int64_t{1} << 50);
  return bools(s, seed);
}

const DType kIndexDtypes[] = {DType::f32, DType::i64, DType::bool_};

// Like same_as_cpu, but fn owns the only handles of its inputs and may hand them over; on
// Vulkan the op must then have reused an input's buffer.
::testing::AssertionResult handed_over_same_as_cpu(const std::vector<Make>& inputs,
                                                   const std::function<Tensor(std::vector<Tensor>)>& fn) {
  auto run = [&](Device d) {
    std::vector<Tensor> v;
    for (const Make& m : inputs) v.push_back(m(d));
    return host_values(fn(std::move(v)));
  };
  const std::vector<double> want = run(Device::cpu());
  const std::uint64_t reuses = counters(vk0()).inplace_reuses;
  const std::vector<double> got = run(vk0());
  if (counters(vk0()).inplace_reuses == reuses) return ::testing::AssertionFailure() << "no buffer was reused";
  return close(got, want, {});
}

TEST(VulkanIndex, GatherAlongEveryDim) {
  KILN_REQUIRE_VULKAN();
  for (DType t : kIndexDtypes) {
    const Make x = of_dtype(t, Shape{40, 50, 60}, 1);
    for (int dim = 0; dim < 3; ++dim) {
      Shape is{30, 45, 55};
      is[dim] = 90;
      const Make idx = ints(is, 2 + dim, 0, Shape{40, 50, 60}[dim]);
      EXPECT_TRUE(same_as_cpu({x, idx}, [dim](const std::vector<Tensor>& v) { return gather(v[0], dim, v[1]); }, {}))
          << dtype_name(t) << " dim " << dim;
    }
  }
}

TEST(VulkanIndex, ScatterAndScatterAddWithDuplicates) {
  KILN_REQUIRE_VULKAN();
  for (DType t : kIndexDtypes) {
    for (int dim = 0; dim < 2; ++dim) {
      const Shape xs{60, 70};
      Shape is{50, 65};
      is[dim] = 300;  // many more positions than the dim has: duplicates everywhere
      const Make x = of_dtype(t, xs, 3), src = of_dtype(t, Shape{310, 310}, 4);
      const Make idx = ints(is, 5 + dim, 0, xs[dim]);
      EXPECT_TRUE(same_as_cpu({x, idx, src},
                              [dim](const std::vector<Tensor>& v) { return scatter_add(v[0], dim, v[1], v[2]); }, {}))
          << dtype_name(t) << " dim " << dim;
      // scatter: the last write of a duplicate wins, as on the CPU.
      EXPECT_TRUE(same_as_cpu({x, idx, src},
                              [dim](const std::vector<Tensor>& v) { return scatter(v[0], dim, v[1], v[2]); }, {}))
          << dtype_name(t) << " dim " << dim;
    }
  }
}

TEST(VulkanIndex, ScatterIntoItsOwnIndexOrSrcBuffer) {
  KILN_REQUIRE_VULKAN();
  // x, index and src of one shape and dtype: the output may take the index's or src's buffer.
  const Make x = ints(Shape{64, 48}, 6, 0, 48), idx = ints(Shape{64, 48}, 7, 0, 48),
             src = ints(Shape{64, 48}, 8, 0, 48);
  EXPECT_TRUE(handed_over_same_as_cpu(
      {x, idx, src}, [](std::vector<Tensor> v) { return scatter_add(v[0], 1, std::move(v[1]), v[2]); }));
  EXPECT_TRUE(handed_over_same_as_cpu({x, idx, src},
                                      [](std::vector<Tensor> v) { return scatter(v[0], 0, v[1], std::move(v[2])); }));
  EXPECT_TRUE(handed_over_same_as_cpu(
      {x, idx, src}, [](std::vector<Tensor> v) { return scatter_add(std::move(v[0]), 1, v[1], v[2]); }));
}

TEST(VulkanIndex, IndexSelectMaskedFillOneHot) {
  KILN_REQUIRE_VULKAN();
  for (DType t : kIndexDtypes) {
    const Make x = of_dtype(t, Shape{30, 40, 50}, 9);
    for (int dim = 0; dim < 3; ++dim) {
      const Make idx = ints(Shape{77}, 10 + dim, 0, Shape{30, 40, 50}[dim]);
      EXPECT_TRUE(
          same_as_cpu({x, idx}, [dim](const std::vector<Tensor>& v) { return index_select(v[0], dim, v[1]); }, {}))
          << dtype_name(t) << " dim " << dim;
    }
    for (const Shape& ms : {Shape{30, 40, 50}, Shape{40, 1}, Shape{30, 1, 50}, Shape{50}, Shape{}}) {
      const Make mask = bools(ms, 13);
      EXPECT_TRUE(handed_over_same_as_cpu(
          {x, mask}, [](std::vector<Tensor> v) { return masked_fill(std::move(v[0]), v[1], 1.0); }))
          << dtype_name(t) << " mask " << ms.str();
    }
  }
  EXPECT_TRUE(same_as_cpu({ints(Shape{300, 7}, 14, 0, 129)},
                          [](const std::vector<Tensor>& v) { return one_hot(v[0], 129); }, {}));
}

// Rows of every length class: trivial, short (many per workgroup), the shared-memory maximum,
// and longer (global path), along the last dim and along the first.
TEST(VulkanIndex, SortIsStableWithNaNLargest) {
  KILN_REQUIRE_VULKAN();
  for (std::int64_t len : {1, 7, 300, 2048, 2049, 5000}) {
    for (bool descending : {false, true}) {
      for (int distinct : {0, 5}) {
        const Make x = index_floats(Shape{len > 2048 ? 3 : 9, len}, 15 + static_cast<unsigned>(len), distinct);
        for (int part = 0; part < 2; ++part) {
          EXPECT_TRUE(same_as_cpu({x},
                                  [&](const std::vector<Tensor>& v) {
                                    auto r = sort(v[0], 1, descending);
                                    return part ? r.second : r.first;
                                  },
                                  {}))
              << "len " << len << " descending " << descending << " distinct " << distinct << " part " << part;
          EXPECT_TRUE(same_as_cpu({x},
                                  [&](const std::vector<Tensor>& v) {
                                    auto r = sort(transpose(v[0], 0, 1), 0, descending);
                                    return part ? r.second : r.first;
                                  },
                                  {}))
              << "dim 0, len " << len << " descending " << descending;
        }
      }
    }
  }
}

TEST(VulkanIndex, SortEveryDtypeAndTopk) {
  KILN_REQUIRE_VULKAN();
  const std::vector<std::pair<Make, const char*>> inputs{
      {ints(Shape{11, 600}, 20, -5, 5), "i64 ties"},
      {ints(Shape{11, 600}, 21, std::numeric_limits<std::int64_t>::min() / 2,
            std::numeric_limits<std::int64_t>::max() / 2),
       "i64"},
      {ints(Shape{2, 3000}, 22, -100, 100), "i64 long"},
      {index_floats(Shape{11, 600}, 23), "f32"},
      {index_floats(Shape{2, 3000}, 24, 9), "f32 long"}};
  for (const auto& [x, what] : inputs) {
    for (bool largest : {false, true}) {
      for (std::int64_t k : {0, 1, 17, 600}) {
        for (int part = 0; part < 2; ++part)
          EXPECT_TRUE(same_as_cpu({x},
                                  [&](const std::vector<Tensor>& v) {
                                    auto r = topk(v[0], k, 1, largest);
                                    return part ? r.second : r.first;
                                  },
                                  {}))
              << what << " k " << k << " largest " << largest;
      }
    }
  }
  const Make b = bools(Shape{5, 700}, 25);
  for (bool descending : {false, true})
    for (int part = 0; part < 2; ++part)
      EXPECT_TRUE(same_as_cpu({b},
                              [&](const std::vector<Tensor>& v) {
                                auto r = sort(v[0], 1, descending);
                                return part ? r.second : r.first;
                              },
                              {}));
}

TEST(VulkanIndex, SortInPlace) {
  KILN_REQUIRE_VULKAN();
  for (std::int64_t len : {100, 4000}) {
    for (int dim = 0; dim < 2; ++dim) {
      const Make x = index_floats(Shape{len, len > 2048 ? 3 : 40}, 30, 11);
      for (int part = 0; part < 2; ++part) {
        EXPECT_TRUE(handed_over_same_as_cpu({x},
                                            [&](std::vector<Tensor> v) {
                                              auto r = sort(std::move(v[0]), dim, true);
                                              return part ? r.second : r.first;
                                            }))
            << "len " << len << " dim " << dim;
      }
      const std::int64_t k = Shape{len, len > 2048 ? 3 : 40}[dim];
      EXPECT_TRUE(
          handed_over_same_as_cpu({x}, [&](std::vector<Tensor> v) { return topk(std::move(v[0]), k, dim).first; }));
    }
  }
}

TEST(VulkanIndex, OutOfRangeFailsTheOpAndItsDependents) {
  KILN_REQUIRE_VULKAN();
  const std::int64_t R = 300, C = 200;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(R * C));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::int64_t>(i * 7 % C);
  idx[idx.size() / 2 + 3] = C + 5;
  const Tensor x = zeros(Shape{R, C}, {DType::f32, vk0()});
  const Tensor g = gather(x, 1, from_vector(idx, Shape{R, C}, vk0()));
  const Tensor dependent = add(g, g);
  for (const Tensor* t : {&g, &dependent}) {
    try {
      (void)t->to_vector<float>().get();
      ADD_FAILURE() << "expected the read to fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.op(), "gather");
      EXPECT_NE(std::string(e.what()).find("index 205 is out of range for dim 1 of size 200"), std::string::npos)
          << e.what();
    }
  }
  // The device keeps serving, and an unrelated tensor is unaffected.
  const Tensor ok = gather(x, 1, from_vector(std::vector<std::int64_t>(C, 3), Shape{1, C}, vk0()));
  EXPECT_EQ(ok.to_vector<float>().get(), std::vector<float>(C, 0.0f));
}

// The range check does not stop the GPU: a loop of index ops runs ahead of it and waits once,
// at its read (before, every gather, scatter, index_select and one_hot waited for the device).
TEST(VulkanIndex, RangeChecksDoNotWaitForTheDevice) {
  KILN_REQUIRE_VULKAN();
  const std::int64_t C = 64;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(C));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::int64_t>((i * 5) % C);
  Tensor x = arange(0.0, static_cast<double>(C), 1.0, {DType::f32, vk0()});
  const Tensor index = from_vector(idx, Shape{C}, vk0());
  const Tensor classes = from_vector(std::vector<std::int64_t>{1, 0, 3}, Shape{3}, vk0());
  sync(vk0()).get();
  const std::uint64_t waits = counters(vk0()).device_waits;
  std::vector<float> expected(static_cast<std::size_t>(C));
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<float>(i);
  for (int step = 0; step < 8; ++step) {
    x = add(gather(x, 0, index), 1.0);
    x = index_select(x, 0, index);
    x = scatter(x, 0, index, x);
    std::vector<float> next(expected.size());
    for (std::size_t i = 0; i < next.size(); ++i) next[i] = expected[static_cast<std::size_t>(idx[i])] + 1.0f;
    std::vector<float> selected(next.size());
    for (std::size_t i = 0; i < next.size(); ++i) selected[i] = next[static_cast<std::size_t>(idx[i])];
    std::vector<float> scattered = selected;
    for (std::size_t i = 0; i < idx.size(); ++i) scattered[static_cast<std::size_t>(idx[i])] = selected[i];
    expected = scattered;
  }
  const Tensor hot = one_hot(classes, 4);
  EXPECT_EQ(x.to_vector<float>().get(), expected);
  EXPECT_EQ(hot.to_vector<std::int64_t>().get(), (std::vector<std::int64_t>{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(counters(vk0()).device_waits - waits, 2u) << "one wait per read";
}

// A failure found after the op reaches exactly the values computed from it, however late it is
// seen: a sync succeeds, unrelated values read fine, the failed value fails every read and
// every op that uses it afterwards, and of two failed ops in a chain the earlier one is named.
TEST(VulkanIndex, DeferredRangeFailureReachesExactlyItsDependents) {
  KILN_REQUIRE_VULKAN();
  const Tensor x = from_vector(std::vector<float>{10, 11, 12, 13}, Shape{4}, vk0());
  const Tensor bad = from_vector(std::vector<std::int64_t>{0, 9, 1, -2}, Shape{4}, vk0());
  const Tensor g = gather(x, 0, bad);
  const Tensor dependent = mul(add(g, 1.0), 2.0);  // a fused chain on the failed value
  const Tensor unrelated = add(x, 1.0);
  // Indices computed from a failed gather, themselves out of range: the gather is named.
  const Tensor long_index = from_vector(std::vector<std::int64_t>{5, 6, 7, 8}, Shape{4}, vk0());
  const Tensor bad_positions = gather(long_index, 0, bad);
  const Tensor chained = index_select(x, 0, bad_positions);
  EXPECT_NO_THROW(sync(vk0()).get()) << "as on the CPU, a sync reports no op's failure";
  EXPECT_EQ(unrelated.to_vector<float>().get(), (std::vector<float>{11, 12, 13, 14}));
  auto expect_gather_error = [](const Tensor& t) {
    try {
      (void)t.to_vector<float>().get();
      ADD_FAILURE() << "expected the read to fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.op(), "gather");
      EXPECT_NE(std::string(e.what()).find("index 9 is out of range for dim 0 of size 4"), std::string::npos)
          << e.what();
    }
  };
  expect_gather_error(dependent);
  expect_gather_error(g);
  expect_gather_error(g);                // the failure stays with the value
  expect_gather_error(sub(g, 1.0));      // and with what is computed from it afterwards
  expect_gather_error(chained);
  EXPECT_EQ(add(x, 2.0).to_vector<float>().get(), (std::vector<float>{12, 13, 14, 15}));
}

}  // namespace
}  // namespace kiln::test
