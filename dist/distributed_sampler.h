// The distributed sampler (torch.utils.data.DistributedSampler): each rank takes its own shard of
// every epoch's order, so that the ranks together see the dataset once per epoch. The order
// depends only on (seed, epoch), the same on every rank; shard r holds positions r, r + W, r + 2W
// ... of it. Without drop_last the order is padded with its own first items to a multiple of W
// (every rank takes the same number of steps); with it, the tail that does not divide is left out.
//
//   auto shard = dist::shard(train, group.rank(), group.world_size(), {.seed = 1});
//   data::DataLoader<> loader(shard, {.batch_size = 128 / group.world_size()});  // no shuffle: the shard orders
//   for (std::int64_t epoch = 0; ...; ++epoch) { shard->set_epoch(epoch); for (auto& b : loader.epoch(epoch)) ... }
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/data/dataset.h"

namespace kiln::dist {

struct SamplerOptions {
  bool shuffle = true;
  std::uint64_t seed = 0;
  bool drop_last = false;
};

class DistributedSampler {
 public:
  DistributedSampler(std::int64_t dataset_size, int rank, int world_size, SamplerOptions options = {});
  // Items per rank and epoch.
  std::int64_t num_samples() const { return num_samples_; }
  // This rank's dataset indices in epoch `epoch`, in order.
  std::vector<std::int64_t> indices(std::int64_t epoch) const;

 private:
  std::int64_t size_;
  int rank_;
  int world_;
  SamplerOptions options_;
  std::int64_t num_samples_;
};

// A dataset of this rank's shard of `base`: item i is base's item indices(epoch)[i], for the epoch
// last given to set_epoch (0 at first). Call set_epoch before each epoch's loop, on every rank.
template <class Item>
class DistributedShard final : public data::Dataset<Item> {
 public:
  DistributedShard(data::DatasetPtr<Item> base, DistributedSampler sampler)
      : base_(std::move(base)), sampler_(std::move(sampler)) {
    KILN_CHECK(base_ != nullptr, "dist.shard", "the dataset is null");
    set_epoch(0);
  }
  std::int64_t size() const override { return sampler_.num_samples(); }
  void set_epoch(std::int64_t epoch) {
    auto order = std::make_shared<const std::vector<std::int64_t>>(sampler_.indices(epoch));
    std::lock_guard<std::mutex> lock(mutex_);
    order_ = std::move(order);
  }

 protected:
  Item fetch(std::int64_t index, std::uint64_t seed) const override {
    std::shared_ptr<const std::vector<std::int64_t>> order;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      order = order_;
    }
    return base_->get((*order)[static_cast<std::size_t>(index)], seed);
  }

 private:
  data::DatasetPtr<Item> base_;
  DistributedSampler sampler_;
  mutable std::mutex mutex_;
  std::shared_ptr<const std::vector<std::int64_t>> order_;
};

template <class Item>
std::shared_ptr<DistributedShard<Item>> shard(data::DatasetPtr<Item> base, int rank, int world_size,
                                              SamplerOptions options = {}) {
  KILN_CHECK(base != nullptr, "dist.shard", "the dataset is null");
  const std::int64_t n = base->size();
  return std::make_shared<DistributedShard<Item>>(std::move(base), DistributedSampler(n, rank, world_size, options));
}

}  // namespace kiln::dist
