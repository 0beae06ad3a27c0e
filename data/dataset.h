// Dataset<Item>: a sized collection whose items are read by index — the one interface every
// dataset, composition and file reader in data/ implements (torch.utils.data.Dataset, Burn's
// Dataset trait). Items are host data (an Example, a window of them, anything copyable); a
// Batcher turns a batch of them into tensors. Datasets are shared as DatasetPtr (immutable,
// read by several loader threads at once).
//
//   auto ds = data::in_memory(std::vector<Example>{...});
//   auto squares = data::lazy(100, [](std::int64_t i) { return i * i; });
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/data/random.h"
#include "kiln/base/error.h"

namespace kiln::data {

template <class Item>
class Dataset {
 public:
  using item_type = Item;
  virtual ~Dataset() = default;

  virtual std::int64_t size() const = 0;

  // Item `index`. `seed` drives the random transforms on the way to it: a DataLoader passes
  // item_seed(its seed, epoch, index). Without one, the seed is item_seed(0, 0, index).
  Item get(std::int64_t index, std::uint64_t seed) const {
    KILN_CHECK(
        index >= 0 && index < size(), "Dataset::get",
        "index " + std::to_string(index) + " is out of range for a dataset of " + std::to_string(size()) + " items");
    return fetch(index, seed);
  }
  Item get(std::int64_t index) const { return get(index, item_seed(0, 0, index)); }

 protected:
  // Called with an index already checked against size(); must be safe to call from several
  // threads at once (loader workers share the dataset).
  virtual Item fetch(std::int64_t index, std::uint64_t seed) const = 0;
};

template <class Item>
using DatasetPtr = std::shared_ptr<const Dataset<Item>>;

// Items held in memory.
template <class Item>
class InMemoryDataset final : public Dataset<Item> {
 public:
  explicit InMemoryDataset(std::vector<Item> items) : items_(std::move(items)) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(items_.size()); }
  const std::vector<Item>& items() const { return items_; }

 protected:
  Item fetch(std::int64_t index, std::uint64_t) const override { return items_[static_cast<std::size_t>(index)]; }

 private:
  std::vector<Item> items_;
};

template <class Item>
DatasetPtr<Item> in_memory(std::vector<Item> items) {
  return std::make_shared<InMemoryDataset<Item>>(std::move(items));
}

// Items computed on access by a function of the index — decoding a record of a memory-mapped
// file, generating synthetic data. The function is called from loader threads concurrently.
template <class Item>
class LazyDataset final : public Dataset<Item> {
 public:
  LazyDataset(std::int64_t size, std::function<Item(std::int64_t)> make) : size_(size), make_(std::move(make)) {
    KILN_CHECK(size >= 0, "lazy", "the size must not be negative, got " + std::to_string(size));
    KILN_CHECK(static_cast<bool>(make_), "lazy", "the item function is empty");
  }
  std::int64_t size() const override { return size_; }

 protected:
  Item fetch(std::int64_t index, std::uint64_t) const override { return make_(index); }

 private:
  std::int64_t size_;
  std::function<Item(std::int64_t)> make_;
};

template <class F>
auto lazy(std::int64_t size, F make) {
  using Item = std::decay_t<std::invoke_result_t<F&, std::int64_t>>;
  return DatasetPtr<Item>(std::make_shared<LazyDataset<Item>>(size, std::move(make)));
}

// Every item, in order (tests, small datasets, building an in-memory copy).
template <class Item>
std::vector<Item> collect(const Dataset<Item>& dataset) {
  std::vector<Item> out;
  out.reserve(static_cast<std::size_t>(dataset.size()));
  for (std::int64_t i = 0; i < dataset.size(); ++i) out.push_back(dataset.get(i));
  return out;
}

}  // namespace kiln::data
