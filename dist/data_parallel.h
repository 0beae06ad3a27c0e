// Data-parallel training (PyTorch's DistributedDataParallel): every rank holds the same model,
// runs it on its own share of each batch, and averages the gradients before the optimizer step,
// so that all ranks take the same step a single process would take with the whole batch.
//
//   dist::ProcessGroup group = dist::ProcessGroup::from_env();
//   Model model = dist::replicate(group, Model{});            // rank 0's weights everywhere
//   dist::GradientReducer reducer(group, model);
//   for (...) {
//     Tensor loss = nn::cross_entropy(model(batch.inputs), batch.labels);
//     Gradients grads = reducer.backward(model, loss);        // averaged over the ranks
//     model = adam.step(lr, std::move(model), grads);         // the same step on every rank
//   }
//
// The gradients travel in buckets of about bucket_bytes, in reverse parameter order (the order
// backward produces them): a bucket is all-reduced on the group's communication thread as soon
// as backward reported its last gradient, while backward still computes the earlier layers'.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/autograd/autograd.h"
#include "kiln/dist/process_group.h"
#include "kiln/nn/module.h"

namespace kiln::dist {

// Checks that every rank holds a model of the same parameter and buffer paths, dtypes and shapes
// (every rank throws the same kiln::Error naming the first difference otherwise: ranks running
// different programs fail at start, not with wrong values), then gives every rank rank 0's values.
void replicate_in_place(ProcessGroup& group, nn::Module& model);
template <class M>
M replicate(ProcessGroup& group, M model) {
  replicate_in_place(group, model);
  return model;
}

// The parameters' and buffers' "path dtype[shape]" lines, what replicate compares across ranks.
std::string model_signature(const nn::Module& model);

struct GradientReducerOptions {
  std::size_t bucket_bytes = std::size_t{25} << 20;  // PyTorch DDP's default bucket_cap_mb
  // The first bucket (the last layers) is smaller, as in PyTorch's DDP: its reduction starts
  // early in backward, and a small model still gets more than one bucket to overlap.
  std::size_t first_bucket_bytes = std::size_t{1} << 20;
};

// Where a data-parallel step's exchange went, summed over the steps since the reducer was made:
// what separates a slow all-reduce (bandwidth) from ranks waiting for the slowest (stragglers).
struct GradientReducerTimes {
  std::uint64_t steps = 0;
  std::uint64_t read_ns = 0;       // the communication thread waiting for gradients' values (backward computing them)
  std::uint64_t all_reduce_ns = 0;  // inside the collective: transfers, and waiting for the other ranks
  std::uint64_t wait_ns = 0;        // the caller's thread, after backward was submitted, until every bucket was reduced
};

class GradientReducer {
 public:
  // The bucket layout comes from `model`'s trainable parameters (f32; their order and shapes
  // must stay the same for every later model passed to backward).
  GradientReducer(ProcessGroup& group, const nn::Module& model, GradientReducerOptions options = {});

  // backward(loss) with each trainable parameter's gradient averaged over the ranks (a
  // parameter that took no part gets zeros, on every rank, so that the ranks stay in step).
  // Every rank must call it once per step. Throws the group's kiln::Error when a rank is lost.
  Gradients backward(const nn::Module& model, const Tensor& loss);

  std::size_t bucket_count() const { return buckets_.size(); }
  // Of the last backward's buckets, how many were handed to the communication thread before
  // backward had submitted its last gradient (the overlap; the rest went after).
  std::size_t buckets_started_during_backward() const { return started_early_; }
  GradientReducerTimes times() const;

 private:
  struct Bucket {
    std::vector<std::size_t> params;  // indices into the model's trainable parameters
    std::size_t elements = 0;
  };
  ProcessGroup& group_;
  std::vector<Shape> shapes_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;  // parameter index -> bucket
  std::size_t started_early_ = 0;
  struct Clocks {  // the communication thread adds to the first two
    std::atomic<std::uint64_t> steps{0}, read_ns{0}, all_reduce_ns{0}, wait_ns{0};
  };
  std::shared_ptr<Clocks> clocks_ = std::make_shared<Clocks>();
};

}  // namespace kiln::dist
