// The Learner on several processes: dist::DataParallel implements train::DistributedTraining
// over a process group (replicate, bucketed gradient averaging, metric means, barriers).
//
//   dist::ProcessGroup group = dist::ProcessGroup::from_env();
//   auto shard = dist::shard(train_set, group.rank(), group.world_size(), {.seed = 1});
//   auto ddp = std::make_shared<dist::DataParallel>(group);
//   ddp->follow_epochs(shard);                          // the shard's set_epoch, each epoch
//   data::DataLoader<> loader(shard, {.batch_size = 128 / group.world_size()});
//   train::Learner learner(Model{}, std::make_unique<optim::Adam>(), step,
//                          {.epochs = 5, .checkpoint_dir = "runs/ddp", .distributed = ddp});
//   learner.fit(loader);
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "kiln/dist/data_parallel.h"
#include "kiln/dist/distributed_sampler.h"
#include "kiln/train/distributed.h"

namespace kiln::dist {

class DataParallel final : public train::DistributedTraining {
 public:
  explicit DataParallel(ProcessGroup& group, GradientReducerOptions options = {}) : group_(group), options_(options) {}

  // A shard whose epoch follows the Learner's training epochs.
  template <class Item>
  DataParallel& follow_epochs(std::shared_ptr<DistributedShard<Item>> shard) {
    epoch_hooks_.push_back([shard = std::move(shard)](std::int64_t epoch) { shard->set_epoch(epoch); });
    return *this;
  }

  int rank() const override { return group_.rank(); }
  int world_size() const override { return group_.world_size(); }
  void replicate(nn::Module& model) override { replicate_in_place(group_, model); }
  Gradients backward(const nn::Module& model, const Tensor& loss) override {
    if (!reducer_) reducer_ = std::make_unique<GradientReducer>(group_, model, options_);
    return reducer_->backward(model, loss);
  }
  void begin_epoch(std::int64_t epoch) override {
    for (const auto& hook : epoch_hooks_) hook(epoch);
  }
  double mean(double value) override { return group_.all_reduce(value, ReduceOp::mean); }
  double sum(double value) override { return group_.all_reduce(value, ReduceOp::sum); }
  bool any(bool value) override { return group_.all_reduce(value ? 1.0 : 0.0, ReduceOp::max) > 0; }
  void barrier() override { group_.barrier(); }

 private:
  ProcessGroup& group_;
  GradientReducerOptions options_;
  std::unique_ptr<GradientReducer> reducer_;
  std::vector<std::function<void(std::int64_t)>> epoch_hooks_;
};

}  // namespace kiln::dist
