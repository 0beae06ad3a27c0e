// Datasets and their compositions: sizes, the items each view returns, random_split's sizes
// against torch.utils.data.random_split, and how seeds reach random transforms.
#include <algorithm>
#include <numeric>
#include <set>

#include "data_test_support.h"

namespace kiln::test {
namespace {

using data::DatasetPtr;

DatasetPtr<std::int64_t> numbers(std::int64_t n, std::int64_t first = 0) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return data::in_memory(std::move(v));
}

TEST(Datasets, InMemoryAndLazyReturnTheirItems) {
  auto held = numbers(4, 10);
  EXPECT_EQ(held->size(), 4);
  EXPECT_EQ(data::collect(*held), (std::vector<std::int64_t>{10, 11, 12, 13}));
  auto squares = data::lazy(5, [](std::int64_t i) { return i * i; });
  EXPECT_EQ(data::collect(*squares), (std::vector<std::int64_t>{0, 1, 4, 9, 16}));
  EXPECT_EQ(data::lazy(0, [](std::int64_t i) { return i; })->size(), 0);
}

TEST(Datasets, AnIndexOutOfRangeIsAnError) {
  auto ds = numbers(3);
  expect_error([&] { return ds->get(3); }, "Dataset::get", {"index 3", "dataset of 3 items"});
  expect_error([&] { return ds->get(-1); }, "Dataset::get", {"index -1"});
  expect_error([] { return data::lazy(-2, [](std::int64_t i) { return i; }); }, "lazy", {"-2"});
}

TEST(Datasets, ConcatRunsThroughItsPartsInOrder) {
  auto ds = data::concat<std::int64_t>({numbers(2, 0), numbers(0), numbers(3, 100), numbers(1, 7)});
  EXPECT_EQ(ds->size(), 6);
  EXPECT_EQ(data::collect(*ds), (std::vector<std::int64_t>{0, 1, 100, 101, 102, 7}));
  EXPECT_EQ(data::concat<std::int64_t>({})->size(), 0);
  expect_error([] { return data::concat<std::int64_t>({nullptr}); }, "concat", {"dataset 0 is null"});
}

TEST(Datasets, SubsetPicksIndicesInTheirOrder) {
  auto ds = data::subset(numbers(5, 10), {4, 0, 0, 2});
  EXPECT_EQ(data::collect(*ds), (std::vector<std::int64_t>{14, 10, 10, 12}));
  expect_error([] { return data::subset(numbers(5), {1, 5}); }, "subset", {"index 5", "position 1", "5 items"});
}

TEST(Datasets, ShuffledIsAPermutationFixedByItsSeed) {
  auto base = numbers(50);
  const auto a = data::collect(*data::shuffled(base, 3));
  const auto b = data::collect(*data::shuffled(base, 3));
  const auto c = data::collect(*data::shuffled(base, 4));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, data::collect(*base));
  EXPECT_NE(a, data::collect(*base));
}

TEST(Datasets, SplitLengthsFollowTorchRandomSplit) {
  const Json refs = load_data_json("refs.json");
  ASSERT_GE(refs["random_split"].size(), 8u);
  for (const Json& c : refs["random_split"]) {
    SCOPED_TRACE(c.dump());
    EXPECT_EQ(data::split_lengths(c["n"], c["lengths"].get<std::vector<double>>()),
              c["sizes"].get<std::vector<std::int64_t>>());
  }
}

TEST(Datasets, RandomSplitIsDisjointCoveringAndSeeded) {
  auto base = numbers(103);
  const auto parts = data::random_split(base, {0.8, 0.1, 0.1}, 11);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0]->size(), 83);  // floor(82.4) = 82, floor(10.3) = 10 twice; the remainder 1 to the first
  EXPECT_EQ(parts[1]->size(), 10);
  EXPECT_EQ(parts[2]->size(), 10);
  std::set<std::int64_t> seen;
  for (const auto& p : parts)
    for (std::int64_t v : data::collect(*p)) EXPECT_TRUE(seen.insert(v).second) << v << " in two splits";
  EXPECT_EQ(seen.size(), 103u);
  EXPECT_EQ(data::collect(*data::random_split(base, {0.8, 0.1, 0.1}, 11)[1]), data::collect(*parts[1]));
  EXPECT_NE(data::collect(*data::random_split(base, {0.8, 0.1, 0.1}, 12)[1]), data::collect(*parts[1]));
  const auto counts = data::random_split(base, {100, 3}, 0);
  EXPECT_EQ(counts[1]->size(), 3);
}

TEST(Datasets, RandomSplitRefusesLengthsThatDoNotFit) {
  auto base = numbers(10);
  expect_error(
      [&] {
        return data::random_split(base, {4, 5}, 0);
      },
      "random_split", {"lengths [4, 5] sum to 9 but the dataset has 10 items"});
  expect_error(
      [&] {
        return data::random_split(base, {0.5, 2.5}, 0);
      },
      "random_split", {"neither fractions summing to 1 nor whole item counts"});
  expect_error([&] { return data::random_split(base, {-0.5, 1.5}, 0); }, "random_split", {"non-negative"});
  expect_error([&] { return data::random_split(base, {}, 0); }, "random_split", {"no lengths"});
}

TEST(Datasets, WindowsSlideOverTheSequence) {
  auto ds = data::windows(numbers(7), 3);
  ASSERT_EQ(ds->size(), 5);
  EXPECT_EQ(ds->get(0), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(ds->get(4), (std::vector<std::int64_t>{4, 5, 6}));
  auto strided = data::windows(numbers(8), 3, 2);  // windows at 0, 2, 4; the one at 6 is partial
  ASSERT_EQ(strided->size(), 3);
  EXPECT_EQ(strided->get(2), (std::vector<std::int64_t>{4, 5, 6}));
  EXPECT_EQ(data::windows(numbers(2), 3)->size(), 0);
  expect_error([] { return data::windows(numbers(4), 0); }, "windows", {"size 0"});
}

TEST(Datasets, MapAppliesItsTransformOnAccess) {
  auto doubled = data::map(numbers(4), [](std::int64_t x) { return 2.5 * static_cast<double>(x); });
  EXPECT_EQ(data::collect(*doubled), (std::vector<double>{0.0, 2.5, 5.0, 7.5}));
}

// A random transform's draws depend on the seed the item is fetched with, and on nothing else.
TEST(Datasets, ARandomTransformFollowsTheItemSeed) {
  auto noisy =
      data::map(numbers(3), [](std::int64_t x, data::Rng& rng) { return static_cast<double>(x) + rng.uniform(); });
  EXPECT_EQ(noisy->get(1, 42), noisy->get(1, 42));
  EXPECT_NE(noisy->get(1, 42), noisy->get(1, 43));
  EXPECT_EQ(noisy->get(1), noisy->get(1, data::item_seed(0, 0, 1)));
  // Through views the seed passes unchanged: the same item with the same seed is the same.
  auto view = data::subset(noisy, {2, 1});
  EXPECT_EQ(view->get(1, 42), noisy->get(1, 42));
  auto joined = data::concat<double>({noisy, noisy});
  EXPECT_EQ(joined->get(4, 9), noisy->get(1, 9));
  // Stacked random maps draw different numbers: the inner one gets a seed of its own.
  auto twice = data::map(noisy, [](double x, data::Rng& rng) { return std::make_pair(x, rng.uniform()); });
  const auto [inner, outer] = twice->get(0, 5);
  EXPECT_NE(inner, outer);  // item 0: inner is the inner transform's draw alone
}

TEST(Random, BelowIsUniformAndInRange) {
  data::Rng rng(1);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) {
    const std::uint64_t v = rng.below(7);
    ASSERT_LT(v, 7u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);  // ~5 standard deviations
  const auto perm = data::random_permutation(1000, 9);
  std::vector<std::int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[static_cast<std::size_t>(i)], i);
  EXPECT_EQ(perm, data::random_permutation(1000, 9));
}

}  // namespace
}  // namespace kiln::test
