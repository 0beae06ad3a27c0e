// Per-thread gradients: each thread takes its own handles to the model's parameters, computes
// the gradients of its own batch, and the main thread sums the Gradients values. Nothing is
// shared between the threads' graphs, and the parameters themselves are never changed.
#include <cstdio>
#include <thread>
#include <vector>

#include <kiln/core.h>

using namespace kiln;

// A two-layer MLP; the loss adds over the batch, so shard gradients sum to the whole batch's.
Tensor loss_of(const std::vector<Tensor>& p, const Tensor& x) {
  Tensor h = relu(add(matmul(x, p[0]), p[1]));
  Tensor out = add(matmul(std::move(h), p[2]), p[3]);
  return mul(sum(mul(out, out)), 0.5);
}

int main() {
  Generator gen(1);
  const std::vector<Tensor> params = {mul(randn(Shape{784, 512}, gen), 0.03), zeros(Shape{512}),
                                      mul(randn(Shape{512, 10}, gen), 0.04), zeros(Shape{10})};
  const Tensor batch = randn(Shape{128, 784}, gen);
  const std::vector<Tensor> shards = chunk(batch, 2, 0);

  std::vector<Gradients> grads(shards.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < shards.size(); ++t) {
    threads.emplace_back([&, t] {
      std::vector<Tensor> mine;  // this thread's leaves: handles to the same parameters, no copy
      for (const Tensor& p : params) mine.push_back(require_grad(p));
      grads[t] = backward(loss_of(mine, shards[t]));
    });
  }
  for (auto& th : threads) th.join();

  Gradients total;
  for (const Gradients& g : grads) total += g;
  const float norm = sum(mul(total.get(params[0]), total.get(params[0]))).item<float>().get();
  std::printf("squared norm of dL/dW1 over %zu threads: %g\n", shards.size(), norm);
}
