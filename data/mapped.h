// A dataset whose items pass through a transform on access (Burn's MapperDataset, a torchvision
// `transform=`). The transform is any callable taking the item, or the item and an Rng& when it
// is random; its Rng is seeded by the item's seed, so a random transform gives the same result
// for the same (loader seed, epoch, index) on any thread.
//
//   auto train = data::map(images, data::compose(data::RandomCrop{28, 4}, data::RandomHorizontalFlip{},
//                                                data::Normalize{{0.2860f}, {0.3530f}}));
//   auto doubled = data::map(numbers, [](float x) { return 2 * x; });
#pragma once
#include <type_traits>
#include <utility>

#include "kiln/data/dataset.h"

namespace kiln::data {

namespace detail {

// Calls a transform with the Rng when it takes one.
template <class F, class T>
decltype(auto) apply_transform(const F& f, T&& item, Rng& rng) {
  if constexpr (std::is_invocable_v<const F&, T&&, Rng&>)
    return f(std::forward<T>(item), rng);
  else
    return f(std::forward<T>(item));
}

template <class F, class In>
using transform_result_t =
    std::decay_t<decltype(apply_transform(std::declval<const F&>(), std::declval<In>(), std::declval<Rng&>()))>;

}  // namespace detail

template <class In, class F>
class MappedDataset final : public Dataset<detail::transform_result_t<F, In>> {
 public:
  using Out = detail::transform_result_t<F, In>;
  MappedDataset(DatasetPtr<In> base, F transform) : base_(std::move(base)), transform_(std::move(transform)) {
    KILN_CHECK(base_ != nullptr, "map", "the dataset is null");
  }
  std::int64_t size() const override { return base_->size(); }

 protected:
  // The base item gets a seed of its own: a random transform below this one draws other numbers.
  Out fetch(std::int64_t index, std::uint64_t seed) const override {
    Rng rng(seed);
    return detail::apply_transform(transform_, base_->get(index, splitmix64(seed)), rng);
  }

 private:
  DatasetPtr<In> base_;
  F transform_;
};

template <class In, class F>
auto map(DatasetPtr<In> base, F transform) {
  using Out = typename MappedDataset<In, F>::Out;
  return DatasetPtr<Out>(std::make_shared<MappedDataset<In, F>>(std::move(base), std::move(transform)));
}

// One transform made of several applied in order, sharing the item's Rng (torchvision Compose).
template <class... F>
auto compose(F... transforms) {
  return [... transforms = std::move(transforms)]<class T>(T item, Rng& rng) {
    ((item = detail::apply_transform(transforms, std::move(item), rng)), ...);
    return item;
  };
}

}  // namespace kiln::data
