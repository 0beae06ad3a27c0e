// Checkpointing scenarios shared by the core suite (test rules) and the end-to-end suite (the
// real rule table): the same gradients with and without recomputation, and the peak memory of
// backward (memory_stats) with each.
#pragma once
#include <vector>

#include "models.h"

namespace kiln::test {

struct BackwardRun {
  std::size_t backward_peak = 0;  // peak bytes in use during backward, above what was in use before the forward
  std::vector<std::vector<float>> grads;
};

// Waits for the forward, measures backward's peak, reads the gradients of `params`.
template <class Forward>
BackwardRun measure_backward(const std::vector<Tensor>& params, Forward&& forward) {
  const Device cpu = Device::cpu();
  sync(cpu).get();
  const std::size_t base = memory_stats(cpu).bytes_in_use;
  std::vector<Tensor> leaves;
  for (const Tensor& p : params) leaves.push_back(require_grad(p));
  BackwardRun run;
  {
    Tensor loss = forward(leaves);
    sync(cpu).get();
    reset_peak_memory(cpu);
    const Gradients g = backward(loss);
    loss = Tensor();
    for (const Tensor& p : params) run.grads.push_back(values(g.get(p)));
    run.backward_peak = memory_stats(cpu).peak_in_use - base;
  }
  return run;
}

// A chain of 4 segments of elementwise ops on a 1 MiB tensor; each segment optionally a
// checkpoint() region.
inline BackwardRun chain_run(bool checkpointed) {
  Generator gen(5);
  const std::vector<Tensor> params{mul(rand(Shape{1 << 18}, gen), 0.5)};
  auto segment = [](const std::vector<Tensor>& in) {
    const Tensor& y = in[0];
    return std::vector<Tensor>{sigmoid(mul(exp(mul(y, 0.5)), y))};
  };
  return measure_backward(params, [&](const std::vector<Tensor>& ps) {
    Tensor y = ps[0];
    for (int s = 0; s < 4; ++s) y = checkpointed ? checkpoint(segment, {y})[0] : segment({y})[0];
    return sum(y);
  });
}

// An MLP 64 -> 256 x4 -> 8 with SiLU written from primitives (z * sigmoid(z), as in a
// transformer's feed-forward block) on a batch of 2048, under a checkpoint policy. Activations
// (2 MiB each) outweigh the parameters and their gradients (under 1 MiB). save_all keeps z,
// sigmoid(z) and the product per layer; recompute_memory_bound keeps the matmul output only.
inline BackwardRun mlp_policy_run(CheckpointPolicy policy) {
  const std::vector<Tensor> params = mlp_params({64, 256, 256, 256, 256, 8}, 3);
  Generator gen(9);
  const Tensor x = randn(Shape{2048, 64}, gen);
  return measure_backward(params, [&](const std::vector<Tensor>& ps) {
    CheckpointScope scope(policy);
    Tensor h = x;
    for (std::size_t l = 0; l < ps.size(); l += 2) {
      Tensor z = add(matmul(std::move(h), ps[l]), ps[l + 1]);
      h = l + 2 < ps.size() ? mul(z, sigmoid(z)) : std::move(z);
    }
    return mul(sum(mul(h, h)), 0.5);
  });
}

}  // namespace kiln::test
