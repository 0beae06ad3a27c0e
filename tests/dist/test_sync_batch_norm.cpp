// dist::SyncBatchNorm: 2 ranks, each with half of a batch, reproduce PyTorch's BatchNorm2d in
// training mode on the whole batch (tests/data/gen_sync_batch_norm.py): each rank's output and
// input-gradient rows are the whole batch's, the weight and bias gradients summed over the ranks
// are PyTorch's, and the running statistics moved as PyTorch's did, on every rank. Inside a
// model trained with data parallelism (its collective in the middle of backward, between the
// gradient buckets' reductions), the averaged gradients are those of one process with the whole
// batch and nn::BatchNorm1d.
#include <gtest/gtest.h>

#include "kiln/autograd/autograd.h"
#include "kiln/dist/dist.h"
#include "kiln/nn/functional.h"
#include "support/reference.h"
#include "training.h"
#include "world.h"

namespace kiln {
namespace {

constexpr const char* kFile = "sync_batch_norm.json";

// Rows [first, first + count) of the JSON tensor, against `got`.
::testing::AssertionResult rows_match(const Tensor& got, const test::Json& want, std::int64_t first,
                                      std::int64_t count) {
  const Tensor rows = narrow(test::make_tensor(want), 0, first, count);
  if (got.shape() != rows.shape())
    return ::testing::AssertionFailure() << "shape " << got.shape().str() << ", want " << rows.shape().str();
  return test::values_close(test::host_values(got), test::host_values(rows), {.rtol = 1e-5, .atol = 1e-5});
}

TEST(DistWorker, DISABLED_SyncBatchNorm) {
  dist::ProcessGroup group = dist::ProcessGroup::from_env();
  const int r = group.rank(), n = group.world_size();
  const test::RefCase c = test::load_cases(kFile).at(0);
  const std::vector<test::Json>& in = c.inputs;
  const std::vector<test::Json>& out = c.outputs;
  const Tensor x = test::make_tensor(in[0]), seed = test::make_tensor(in[5]);
  const std::int64_t rows = x.shape()[0] / n, first = r * rows;

  dist::SyncBatchNorm bn(group, x.shape()[1],
                         {.eps = c.attrs.at("eps").get<double>(), .momentum = c.attrs.at("momentum").get<double>()});
  bn.weight.set(test::make_tensor(in[1]));
  bn.bias.set(test::make_tensor(in[2]));
  bn.running_mean.set(test::make_tensor(in[3]));
  bn.running_var.set(test::make_tensor(in[4]));

  const Tensor xr = require_grad(narrow(x, 0, first, rows));
  const Tensor y = bn.forward(xr);
  const Gradients g = backward(sum(mul(y, narrow(seed, 0, first, rows))));
  EXPECT_TRUE(rows_match(y, out[0], first, rows)) << "y";
  EXPECT_TRUE(rows_match(g.get(xr), out[1], first, rows)) << "dx";
  const test::Tolerance tol{.rtol = 1e-5, .atol = 1e-5};
  EXPECT_TRUE(test::matches(group.all_reduce(g.get(bn.weight)), out[2], tol)) << "dweight summed over the ranks";
  EXPECT_TRUE(test::matches(group.all_reduce(g.get(bn.bias)), out[3], tol)) << "dbias summed over the ranks";
  EXPECT_TRUE(test::matches(bn.running_mean.get(), out[4], tol)) << "running_mean";
  EXPECT_TRUE(test::matches(bn.running_var.get(), out[5], tol)) << "running_var";
  EXPECT_EQ(bn.num_batches_tracked.get().item<std::int64_t>().get(), 1);

  // A wrong input is an error at the call, before any collective (the other rank does the same).
  try {
    (void)bn.forward(zeros(Shape{2, 4, 2, 2}));
    ADD_FAILURE() << "no error for 4 channels";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("SyncBatchNorm"), std::string::npos) << what;
    EXPECT_NE(what.find("C = 3, got f32[2, 4, 2, 2]"), std::string::npos) << what;
  }

  // Eval mode: batch normalization with the running statistics, no collective.
  bn.eval();
  const nn::BatchNormResult plain =
      nn::batch_norm(narrow(x, 0, first, rows), bn.running_mean.get(), bn.running_var.get(), detach(bn.weight),
                     detach(bn.bias), false, 0.1, c.attrs.at("eps").get<double>());
  EXPECT_TRUE(test::values_close(test::host_values(bn.forward(xr)), test::host_values(plain.output), {}));

  test::write_report(r, ::testing::Test::HasFailure() ? "failed" : "ok");
}

// Linear 6 -> 3, batch norm, cross-entropy: with SyncBatchNorm on ranks, or BatchNorm1d alone.
template <class Norm>
struct NormNet : nn::Module {
  nn::Linear fc{6, 3};
  Norm bn;
  template <class... A>
  explicit NormNet(A&&... norm_args) : bn(std::forward<A>(norm_args)...) {
    std::int64_t k = 0;  // the same weights on every rank and in the reference
    map_parameters_in_place([&](const std::string&, const Tensor& v) {
      std::vector<float> w(static_cast<std::size_t>(v.numel()));
      for (float& x : w) x = 0.5f * static_cast<float>(std::sin(0.9 * static_cast<double>(++k))) + 0.2f;
      return from_vector(std::move(w), v.shape());
    });
  }
  Tensor forward(const Tensor& x) const { return bn.forward(fc.forward(x)); }
  KILN_MODULE(NormNet, fc, bn)
};

TEST(DistWorker, DISABLED_SyncBatchNormDataParallel) {
  dist::ProcessGroup group = dist::ProcessGroup::from_env();
  const int r = group.rank(), n = group.world_size();
  NormNet<dist::SyncBatchNorm> model(group, 3);
  dist::GradientReducer reducer(group, model,
                                {.bucket_bytes = 16, .first_bucket_bytes = 16});  // a bucket per parameter or so
  NormNet<nn::BatchNorm1d> whole(3);
  const std::int64_t rows = test::kGlobalBatch / n;
  for (int step = 0; step < 2; ++step) {
    const auto [x, y] = test::batch_rows(step, r * rows, rows);
    const Gradients g = reducer.backward(model, nn::cross_entropy(model(x), y));
    const auto [xa, ya] = test::batch_rows(step, 0, test::kGlobalBatch);
    const Gradients want = backward(nn::cross_entropy(whole(xa), ya));
    const std::vector<Tensor> got_params = model.parameters(), want_params = whole.parameters();
    ASSERT_EQ(got_params.size(), want_params.size());
    for (std::size_t i = 0; i < got_params.size(); ++i)
      EXPECT_TRUE(test::values_close(test::host_values(g.get(got_params[i])),
                                     test::host_values(want.get(want_params[i])), {.rtol = 1e-5, .atol = 1e-6}))
          << "parameter #" << i << " at step " << step;
  }
  EXPECT_TRUE(test::values_close(test::host_values(model.bn.running_var.get()),
                                 test::host_values(whole.bn.running_var.get()), {.rtol = 1e-5, .atol = 1e-6}));
  test::write_report(r, ::testing::Test::HasFailure() ? "failed" : "ok");
}

TEST(DistSyncBatchNorm, InsideDataParallelTrainingGradientsAreTheWholeBatchs) {
  const test::WorldResult w = test::run_world("SyncBatchNormDataParallel", 2, 60);
  ASSERT_TRUE(test::every_rank_ok(w));
}

TEST(DistSyncBatchNorm, TwoRanksWithHalfTheBatchMatchTheWholeBatch) {
  const test::WorldResult w = test::run_world("SyncBatchNorm", 2, 60);
  ASSERT_TRUE(test::every_rank_ok(w));
}

}  // namespace
}  // namespace kiln
