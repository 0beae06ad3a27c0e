// The small model and data the data-parallel tests train: an MLP 6 -> 16 -> 3 with
// cross-entropy on a synthetic batch per step, all values closed forms of their indices, so
// that every process (and the single-process reference) builds the same model and data.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/dist/dist.h"
#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"

namespace kiln::test {

struct DistMlp : nn::Module {
  nn::Linear fc1, fc2;
  explicit DistMlp(std::int64_t hidden = 16) : fc1(6, hidden), fc2(hidden, 3) {
    // Deterministic weights: the default initializer's draws are not what this test is about.
    std::int64_t k = 0;
    map_parameters_in_place([&](const std::string&, const Tensor& v) {
      std::vector<float> w(static_cast<std::size_t>(v.numel()));
      for (float& x : w) x = 0.3f * static_cast<float>(std::sin(0.7 * static_cast<double>(++k)));
      return from_vector(std::move(w), v.shape());
    });
  }
  Tensor forward(const Tensor& x) const { return fc2(relu(fc1(x))); }
  KILN_MODULE(DistMlp, fc1, fc2)
};

constexpr std::int64_t kGlobalBatch = 8;
constexpr int kSteps = 20;

// Rows [first, first + count) of step `step`'s global batch: inputs and class labels.
inline std::pair<Tensor, Tensor> batch_rows(int step, std::int64_t first, std::int64_t count) {
  std::vector<float> x;
  std::vector<std::int64_t> y;
  for (std::int64_t i = first; i < first + count; ++i) {
    for (int j = 0; j < 6; ++j)
      x.push_back(static_cast<float>(std::cos(1.3 * static_cast<double>(step * 97 + i * 7 + j))));
    y.push_back((step + i) % 3);
  }
  return {from_vector(std::move(x), Shape{count, 6}), from_vector(std::move(y), Shape{count})};
}

inline Tensor step_loss(const DistMlp& m, int step, std::int64_t first, std::int64_t count) {
  const auto [x, y] = batch_rows(step, first, count);
  return nn::cross_entropy(m(x), y);
}

// Every parameter's values, in order, on the host.
inline std::vector<float> flat_parameters(const nn::Module& m) {
  std::vector<float> out;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.to_vector<float>().get();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// The floats' bytes, to compare ranks bit for bit.
inline std::string as_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// A world's parameters (the floats' bytes rank 0 wrote) against the single-process reference
// `want`, within 1e-5 of the largest magnitude; and the training moved them by more than
// `min_moved` from DistMlp's start (a reducer that dropped the gradients fails the first check,
// not this one: it makes sure the comparison compares something).
inline void expect_trained_like(const std::string& bytes, const std::vector<float>& want, double min_moved) {
  ASSERT_EQ(bytes.size(), want.size() * sizeof(float));
  std::vector<float> got(want.size());
  std::memcpy(got.data(), bytes.data(), bytes.size());
  float scale = 0;
  for (float v : want) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * scale) << "parameter value #" << i;
  const std::vector<float> initial = flat_parameters(DistMlp{});
  double moved = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    moved = std::max(moved, static_cast<double>(std::abs(want[i] - initial[i])));
  EXPECT_GT(moved, min_moved);
}

}  // namespace kiln::test
