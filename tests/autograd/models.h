// Small models shared by the autograd suites: an MLP (matmul, add, relu) whose loss adds over the
// batch, so that gradients of batch shards sum to the gradient of the whole batch.
#pragma once
#include <cmath>
#include <exception>
#include <thread>
#include <vector>

#include "kiln/autograd/autograd.h"
#include "kiln/engine/kiln.h"
#include "support/reference.h"

namespace kiln::test {

// The case `name` of the core's own reference file (tests/data/gen_autograd_core.py).
inline RefCase core_case(const std::string& name) { return cases_for("autograd_core.json", name).at(0); }

// W1, b1, W2, b2, ... for layer sizes {in, hidden..., out}; plain tensors (no gradients).
inline std::vector<Tensor> mlp_params(const std::vector<std::int64_t>& sizes, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<Tensor> ps;
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    ps.push_back(mul(randn(Shape{sizes[l], sizes[l + 1]}, gen), 1.0 / std::sqrt(static_cast<double>(sizes[l]))));
    ps.push_back(mul(randn(Shape{sizes[l + 1]}, gen), 0.1));
  }
  return ps;
}

inline Tensor mlp_forward(const std::vector<Tensor>& ps, Tensor x) {
  for (std::size_t l = 0; l < ps.size(); l += 2) {
    x = add(matmul(std::move(x), ps[l]), ps[l + 1]);
    if (l + 2 < ps.size()) x = relu(std::move(x));
  }
  return x;
}

// 0.5 * sum(out^2): a loss that adds over the rows of the batch.
inline Tensor mlp_loss(const std::vector<Tensor>& ps, Tensor x) {
  Tensor out = mlp_forward(ps, std::move(x));
  return mul(sum(mul(out, out)), 0.5);
}

// The gradients of `params` for one batch, on the calling thread.
inline Gradients mlp_gradients(const std::vector<Tensor>& params, const Tensor& batch) {
  std::vector<Tensor> leaves;
  for (const Tensor& p : params) leaves.push_back(require_grad(p));
  return backward(mlp_loss(leaves, batch));
}

// Each shard's gradients on its own thread (each with its own handles to the parameters), summed
// on the calling thread in shard order.
inline Gradients mlp_gradients_threaded(const std::vector<Tensor>& params, const std::vector<Tensor>& shards) {
  std::vector<Gradients> per_thread(shards.size());
  std::vector<std::exception_ptr> errors(shards.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < shards.size(); ++t)
    threads.emplace_back([&, t, local = params] {
      try {
        per_thread[t] = mlp_gradients(local, shards[t]);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  for (auto& th : threads) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  Gradients total;
  for (const Gradients& g : per_thread) total += g;
  return total;
}

inline std::vector<float> values(const Tensor& t) { return t.to_vector<float>().get(); }

}  // namespace kiln::test
