// Checks that an installed kiln compiles (every public header, through <kiln/kiln.h>), links and
// computes: a matmul, a relu and an nn::Linear forward, each against values worked out by hand. Exits non-zero on any mismatch.
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include <kiln/kiln.h>  // every public header: each must resolve in the installed tree

namespace {

int failures = 0;

void expect(const char* what, const std::vector<float>& got, const std::vector<float>& want) {
  bool ok = got.size() == want.size();
  for (std::size_t i = 0; ok && i < got.size(); ++i) ok = std::fabs(got[i] - want[i]) <= 1e-5f;
  std::printf("%-8s %s\n", what, ok ? "ok" : "MISMATCH");
  if (!ok) {
    ++failures;
    for (float v : got) std::printf("  %g", v);
    std::printf("\n");
  }
}

}  // namespace

int main() try {
  using namespace kiln;
  // [[1, 2], [3, 4]] x [[1, -1], [-2, 1]] = [[-3, 1], [-5, 1]]
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4}, Shape{2, 2});
  Tensor b = from_vector(std::vector<float>{1, -1, -2, 1}, Shape{2, 2});
  Tensor product = matmul(a, b);
  expect("matmul", product.to_vector<float>().get(), {-3, 1, -5, 1});
  expect("relu", relu(product).to_vector<float>().get(), {0, 1, 0, 1});

  // y = x Wᵀ + bias, with W = [[1, 0], [1, 1], [0, -1]] and bias = [0.5, 0, 1].
  nn::Linear linear(2, 3);
  linear.weight.set(from_vector(std::vector<float>{1, 0, 1, 1, 0, -1}, Shape{3, 2}));
  linear.bias.set(from_vector(std::vector<float>{0.5f, 0, 1}, Shape{3}));
  expect("linear", linear(a).to_vector<float>().get(), {1.5f, 3, -1, 3.5f, 7, -3});
  return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "kiln_consumer: %s\n", e.what());
  return 1;
}
