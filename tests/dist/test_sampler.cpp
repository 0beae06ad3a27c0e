// The distributed sampler: unshuffled shards as PyTorch's DistributedSampler gives them
// (tests/data/gen_dist_sampler.py), and shuffled shards that are deterministic for a seed,
// change with the epoch, and together cover the dataset once (padded as PyTorch pads).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "kiln/data/data.h"
#include "kiln/dist/dist.h"
#include "support/test_files.h"

namespace kiln {
namespace {

TEST(DistSampler, UnshuffledShardsMatchPyTorch) {
  const test::Json cases = test::load_reference_json("dist_sampler.json", "python3 tests/data/gen_dist_sampler.py");
  ASSERT_FALSE(cases.empty());
  for (const test::Json& c : cases) {
    const int world = c["world"];
    for (int r = 0; r < world; ++r) {
      const dist::DistributedSampler s(c["size"], r, world, {.shuffle = false, .drop_last = c["drop_last"]});
      const auto want = c["shards"][static_cast<std::size_t>(r)].get<std::vector<std::int64_t>>();
      EXPECT_EQ(s.indices(3), want) << c.dump();
      EXPECT_EQ(s.num_samples(), static_cast<std::int64_t>(want.size())) << c.dump();
    }
  }
}

TEST(DistSampler, ShuffledShardsCoverTheDatasetOncePerEpochAndDependOnSeedAndEpoch) {
  const std::int64_t size = 101;
  const int world = 4;
  for (std::int64_t epoch : {0, 1}) {
    std::multiset<std::int64_t> seen;
    for (int r = 0; r < world; ++r) {
      const dist::DistributedSampler s(size, r, world, {.seed = 7});
      const std::vector<std::int64_t> idx = s.indices(epoch);
      EXPECT_EQ(idx.size(), 26u);
      EXPECT_EQ(idx, dist::DistributedSampler(size, r, world, {.seed = 7}).indices(epoch));  // deterministic
      seen.insert(idx.begin(), idx.end());
    }
    // 104 places: every item once, and 3 items twice (the padding).
    EXPECT_EQ(seen.size(), 104u);
    for (std::int64_t i = 0; i < size; ++i) EXPECT_GE(seen.count(i), 1u) << i;
  }
  const dist::DistributedSampler s(size, 0, world, {.seed = 7});
  EXPECT_NE(s.indices(0), s.indices(1));
  EXPECT_NE(s.indices(0), dist::DistributedSampler(size, 0, world, {.seed = 8}).indices(0));
}

TEST(DistSampler, ShardDatasetFollowsSetEpoch) {
  std::vector<std::int64_t> items(20);
  for (std::size_t i = 0; i < items.size(); ++i) items[i] = static_cast<std::int64_t>(100 + i);
  const auto shard = dist::shard(data::in_memory(items), 1, 2, {.seed = 3});
  const dist::DistributedSampler s(20, 1, 2, {.seed = 3});
  for (std::int64_t epoch : {0, 5}) {
    shard->set_epoch(epoch);
    ASSERT_EQ(shard->size(), 10);
    const std::vector<std::int64_t> idx = s.indices(epoch);
    for (std::int64_t i = 0; i < 10; ++i) EXPECT_EQ(shard->get(i), 100 + idx[static_cast<std::size_t>(i)]);
  }
}

TEST(DistSampler, BadArgumentsAreClearErrors) {
  EXPECT_THROW(dist::DistributedSampler(10, 2, 2), Error);
  EXPECT_THROW(dist::DistributedSampler(-1, 0, 2), Error);
  EXPECT_THROW(dist::DistributedSampler(1, 0, 2, {.drop_last = true}), Error);
  EXPECT_THROW(dist::DistributedSampler(10, 0, 2).indices(-1), Error);
}

}  // namespace
}  // namespace kiln
