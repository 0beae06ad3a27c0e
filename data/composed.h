// Datasets made of other datasets, each a view that copies no items: concatenation, a subset
// of indices, a seeded shuffle, a random split (torch.utils.data.random_split) and sliding
// windows (Burn's WindowsDataset). The seed an item is fetched with passes through unchanged,
// so a random transform underneath gives the same result through any view.
//
//   auto parts = data::random_split(all, {0.9, 0.1}, /*seed=*/7);  // parts[0] train, parts[1] valid
//   auto both = data::concat<Example>({train_a, train_b});
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"

namespace kiln::data {

// The items of several datasets one after another.
template <class Item>
class ConcatDataset final : public Dataset<Item> {
 public:
  explicit ConcatDataset(std::vector<DatasetPtr<Item>> parts) : parts_(std::move(parts)) {
    ends_.reserve(parts_.size());
    std::int64_t end = 0;
    for (std::size_t i = 0; i < parts_.size(); ++i) {
      KILN_CHECK(parts_[i] != nullptr, "concat", "dataset " + std::to_string(i) + " is null");
      end += parts_[i]->size();
      ends_.push_back(end);
    }
  }
  std::int64_t size() const override { return ends_.empty() ? 0 : ends_.back(); }

 protected:
  Item fetch(std::int64_t index, std::uint64_t seed) const override {
    const auto part = static_cast<std::size_t>(std::upper_bound(ends_.begin(), ends_.end(), index) - ends_.begin());
    const std::int64_t begin = part == 0 ? 0 : ends_[part - 1];
    return parts_[part]->get(index - begin, seed);
  }

 private:
  std::vector<DatasetPtr<Item>> parts_;
  std::vector<std::int64_t> ends_;  // ends_[i]: one past the last index of part i
};

template <class Item>
DatasetPtr<Item> concat(std::vector<DatasetPtr<Item>> parts) {
  return std::make_shared<ConcatDataset<Item>>(std::move(parts));
}

// The items at `indices` of another dataset, in that order (indices may repeat).
template <class Item>
class SubsetDataset final : public Dataset<Item> {
 public:
  SubsetDataset(DatasetPtr<Item> base, std::vector<std::int64_t> indices)
      : base_(std::move(base)), indices_(std::move(indices)) {
    KILN_CHECK(base_ != nullptr, "subset", "the dataset is null");
    for (std::size_t i = 0; i < indices_.size(); ++i)
      KILN_CHECK(indices_[i] >= 0 && indices_[i] < base_->size(), "subset",
                 "index " + std::to_string(indices_[i]) + " (position " + std::to_string(i) +
                     ") is out of range for a dataset of " + std::to_string(base_->size()) + " items");
  }
  std::int64_t size() const override { return static_cast<std::int64_t>(indices_.size()); }
  const std::vector<std::int64_t>& indices() const { return indices_; }

 protected:
  Item fetch(std::int64_t index, std::uint64_t seed) const override {
    return base_->get(indices_[static_cast<std::size_t>(index)], seed);
  }

 private:
  DatasetPtr<Item> base_;
  std::vector<std::int64_t> indices_;
};

template <class Item>
DatasetPtr<Item> subset(DatasetPtr<Item> base, std::vector<std::int64_t> indices) {
  return std::make_shared<SubsetDataset<Item>>(std::move(base), std::move(indices));
}

// A fixed permutation of a dataset, chosen by `seed` (a loader reshuffles every epoch instead).
template <class Item>
DatasetPtr<Item> shuffled(DatasetPtr<Item> base, std::uint64_t seed) {
  KILN_CHECK(base != nullptr, "shuffled", "the dataset is null");
  std::vector<std::int64_t> order = random_permutation(base->size(), seed);
  return subset(std::move(base), std::move(order));
}

// The sizes random_split gives a dataset of n items, by torch.utils.data.random_split's rule:
// lengths that sum to 1 are fractions (each split gets floor(n * fraction), then the remainder
// goes one item at a time to the splits in order); otherwise they are item counts that must be
// whole and sum to n.
std::vector<std::int64_t> split_lengths(std::int64_t n, const std::vector<double>& lengths);

// Disjoint random subsets covering the dataset, with the sizes split_lengths gives. The split
// depends only on `seed`.
template <class Item>
std::vector<DatasetPtr<Item>> random_split(DatasetPtr<Item> base, const std::vector<double>& lengths,
                                           std::uint64_t seed) {
  KILN_CHECK(base != nullptr, "random_split", "the dataset is null");
  const std::vector<std::int64_t> sizes = split_lengths(base->size(), lengths);
  const std::vector<std::int64_t> order = random_permutation(base->size(), seed);
  std::vector<DatasetPtr<Item>> out;
  auto next = order.begin();
  for (std::int64_t size : sizes) {
    out.push_back(subset(base, std::vector<std::int64_t>(next, next + size)));
    next += size;
  }
  return out;
}

// Window i holds items [i * stride, i * stride + size) of a dataset (a sequence of time steps,
// say); a partial window at the end is left out. Element k of a window is fetched with
// mix_seed(seed, k), so each has its own random draws.
template <class Item>
class WindowsDataset final : public Dataset<std::vector<Item>> {
 public:
  WindowsDataset(DatasetPtr<Item> base, std::int64_t size, std::int64_t stride)
      : base_(std::move(base)), size_(size), stride_(stride) {
    KILN_CHECK(base_ != nullptr, "windows", "the dataset is null");
    KILN_CHECK(
        size > 0 && stride > 0, "windows",
        "size and stride must be positive, got size " + std::to_string(size) + " and stride " + std::to_string(stride));
  }
  std::int64_t size() const override { return base_->size() < size_ ? 0 : (base_->size() - size_) / stride_ + 1; }

 protected:
  std::vector<Item> fetch(std::int64_t index, std::uint64_t seed) const override {
    std::vector<Item> window;
    window.reserve(static_cast<std::size_t>(size_));
    for (std::int64_t k = 0; k < size_; ++k)
      window.push_back(base_->get(index * stride_ + k, mix_seed(seed, static_cast<std::uint64_t>(k))));
    return window;
  }

 private:
  DatasetPtr<Item> base_;
  std::int64_t size_;
  std::int64_t stride_;
};

template <class Item>
DatasetPtr<std::vector<Item>> windows(DatasetPtr<Item> base, std::int64_t size, std::int64_t stride = 1) {
  return std::make_shared<WindowsDataset<Item>>(std::move(base), size, stride);
}

}  // namespace kiln::data
