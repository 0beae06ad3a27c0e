#include "kiln/dist/distributed_sampler.h"

#include <numeric>
#include <string>

namespace kiln::dist {

DistributedSampler::DistributedSampler(std::int64_t dataset_size, int rank, int world_size, SamplerOptions options)
    : size_(dataset_size), rank_(rank), world_(world_size), options_(options) {
  KILN_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, "dist.DistributedSampler",
             "rank " + std::to_string(rank) + " is outside a world of " + std::to_string(world_size));
  KILN_CHECK(dataset_size >= 0, "dist.DistributedSampler",
             "the dataset size must not be negative, got " + std::to_string(dataset_size));
  num_samples_ = options.drop_last ? dataset_size / world_size : (dataset_size + world_size - 1) / world_size;
  KILN_CHECK(num_samples_ > 0 || dataset_size == 0, "dist.DistributedSampler",
             "a dataset of " + std::to_string(dataset_size) + " items leaves nothing to each of " +
                 std::to_string(world_size) + " ranks with drop_last");
}

std::vector<std::int64_t> DistributedSampler::indices(std::int64_t epoch) const {
  KILN_CHECK(epoch >= 0, "dist.DistributedSampler", "the epoch must not be negative, got " + std::to_string(epoch));
  std::vector<std::int64_t> order;
  if (options_.shuffle) {
    order = data::random_permutation(size_, data::mix_seed(options_.seed, static_cast<std::uint64_t>(epoch)));
  } else {
    order.resize(static_cast<std::size_t>(size_));
    std::iota(order.begin(), order.end(), std::int64_t{0});
  }
  const std::size_t total = static_cast<std::size_t>(num_samples_) * static_cast<std::size_t>(world_);
  for (std::size_t i = order.size(); i < total; ++i) order.push_back(order[i % static_cast<std::size_t>(size_)]);
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(num_samples_));
  for (std::size_t i = static_cast<std::size_t>(rank_); i < total; i += static_cast<std::size_t>(world_))
    mine.push_back(order[i]);
  return mine;
}

}  // namespace kiln::dist
