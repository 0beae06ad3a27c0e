// DataLoader: batches of a dataset as kiln tensors on a device, in an order that depends only on
// (seed, epoch), built ahead of the model by worker threads (torch.utils.data.DataLoader, Burn's
// DataLoaderBuilder). Every item is fetched with item_seed(seed, epoch, index), so batches and
// their random transforms are the same for any number of workers.
//
//   data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .seed = 1, .workers = 2});
//   for (std::int64_t epoch = 0; epoch < 10; ++epoch)
//     for (data::Batch& batch : loader.epoch(epoch)) step(batch.inputs, batch.labels);
//
// Leaving the loop early stops and joins the workers. A batch that fails to build (a bad file,
// a transform that throws) throws a kiln::Error from the loop at that batch.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/data/batch_pipeline.h"
#include "kiln/data/dataset.h"
#include "kiln/data/example.h"

namespace kiln::data {

struct LoaderOptions {
  std::int64_t batch_size = 1;
  bool shuffle = false;
  std::uint64_t seed = 0;
  bool drop_last = false;  // leave out the last batch when it is smaller than batch_size
  int workers = 0;         // threads building batches; 0: built on the thread that iterates
  int prefetch = 2;        // batches each worker may build ahead of the consumer
  Device device = Device::cpu();
};

// Turns a batch's items into the batch the model takes; runs on the worker threads.
template <class Item, class BatchT>
using Batcher = std::function<BatchT(std::vector<Item> items, Device device)>;

// One epoch's run: iterate it once with range-for. Owns the worker threads; destroying it (the
// loop ending, or a break) stops them.
template <class BatchT>
class EpochRun {
 public:
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = BatchT;
    using difference_type = std::ptrdiff_t;
    using pointer = BatchT*;
    using reference = BatchT&;

    iterator() = default;
    explicit iterator(EpochRun* run) : run_(run) {}
    BatchT& operator*() const { return *run_->current_; }
    BatchT* operator->() const { return run_->current_.get(); }
    iterator& operator++() {
      run_->advance();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) { return it.at_end(); }

   private:
    bool at_end() const { return !run_ || !run_->current_; }
    EpochRun* run_ = nullptr;
  };

  explicit EpochRun(std::unique_ptr<detail::BatchPipeline> pipeline) : pipeline_(std::move(pipeline)) {}
  EpochRun(EpochRun&&) noexcept = default;
  EpochRun& operator=(EpochRun&&) noexcept = default;

  // Waits for the first batch.
  iterator begin() {
    if (!started_) {
      started_ = true;
      advance();
    }
    return iterator(this);
  }
  std::default_sentinel_t end() const { return {}; }

 private:
  void advance() {
    current_.reset();
    current_ = std::static_pointer_cast<BatchT>(pipeline_->next());
  }

  std::unique_ptr<detail::BatchPipeline> pipeline_;
  std::shared_ptr<BatchT> current_;
  bool started_ = false;
};

template <class Item, class BatchT>
Batcher<Item, BatchT> default_batcher() {
  if constexpr (std::is_same_v<Item, Example> && std::is_same_v<BatchT, Batch>)
    return [](std::vector<Item> items, Device device) { return stack_examples(items, device); };
  else
    return {};
}

template <class Item = Example, class BatchT = Batch>
class DataLoader {
 public:
  // `batcher` may be left out for Examples (stack_examples makes a Batch).
  DataLoader(DatasetPtr<Item> dataset, LoaderOptions options,
             Batcher<Item, BatchT> batcher = default_batcher<Item, BatchT>())
      : dataset_(std::move(dataset)), options_(options), batcher_(std::move(batcher)) {
    KILN_CHECK(dataset_ != nullptr, "DataLoader", "the dataset is null");
    KILN_CHECK(static_cast<bool>(batcher_), "DataLoader", "no batcher: items other than Example need one");
    KILN_CHECK(options_.batch_size > 0, "DataLoader",
               "batch_size must be positive, got " + std::to_string(options_.batch_size));
    KILN_CHECK(options_.workers >= 0 && options_.prefetch > 0, "DataLoader",
               "workers must not be negative and prefetch must be positive, got " + std::to_string(options_.workers) +
                   " workers and prefetch " + std::to_string(options_.prefetch));
  }

  const LoaderOptions& options() const { return options_; }
  const DatasetPtr<Item>& dataset() const { return dataset_; }

  // Batches per epoch (len(loader)).
  std::int64_t num_batches() const {
    const std::int64_t n = dataset_->size(), b = options_.batch_size;
    return options_.drop_last ? n / b : (n + b - 1) / b;
  }

  // The dataset indices of epoch `epoch`, in the order they are batched.
  std::vector<std::int64_t> order(std::int64_t epoch) const {
    if (options_.shuffle)
      return random_permutation(dataset_->size(), mix_seed(options_.seed, static_cast<std::uint64_t>(epoch)));
    std::vector<std::int64_t> identity(static_cast<std::size_t>(dataset_->size()));
    std::iota(identity.begin(), identity.end(), std::int64_t{0});
    return identity;
  }

  // The batches of epoch `epoch`, from batch `first_batch` on (to resume an epoch where a
  // checkpoint left it); iterate the result once.
  EpochRun<BatchT> epoch(std::int64_t epoch, std::int64_t first_batch = 0) const {
    KILN_CHECK(epoch >= 0, "DataLoader", "the epoch must not be negative, got " + std::to_string(epoch));
    KILN_CHECK(first_batch >= 0 && first_batch <= num_batches(), "DataLoader",
               "first batch " + std::to_string(first_batch) + " is outside an epoch of " +
                   std::to_string(num_batches()) + " batches");
    auto indices = std::make_shared<const std::vector<std::int64_t>>(order(epoch));
    auto make = [dataset = dataset_, batcher = batcher_, options = options_, indices,
                 epoch](std::int64_t batch) -> std::shared_ptr<void> {
      const auto first = static_cast<std::size_t>(batch * options.batch_size);
      const std::size_t last = std::min(indices->size(), first + static_cast<std::size_t>(options.batch_size));
      std::vector<Item> items;
      items.reserve(last - first);
      for (std::size_t i = first; i < last; ++i) {
        const std::int64_t index = (*indices)[i];
        items.push_back(dataset->get(index, item_seed(options.seed, static_cast<std::uint64_t>(epoch), index)));
      }
      return std::make_shared<BatchT>(batcher(std::move(items), options.device));
    };
    const int ahead = std::max(1, options_.workers * options_.prefetch);
    return EpochRun<BatchT>(std::make_unique<detail::BatchPipeline>(first_batch, num_batches(), options_.workers, ahead,
                                                                    std::move(make), "epoch " + std::to_string(epoch)));
  }

 private:
  DatasetPtr<Item> dataset_;
  LoaderOptions options_;
  Batcher<Item, BatchT> batcher_;
};

}  // namespace kiln::data
