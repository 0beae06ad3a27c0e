// GradientReducer in a world of one process (no peers): the gradients are backward's, a parameter
// the loss does not use gets zeros (so that every rank's buckets complete), and a model that is
// not the one the reducer was made for is a clear error.
#include <gtest/gtest.h>

#include "support/reference.h"
#include "training.h"
#include "world.h"

namespace kiln {
namespace {

dist::ProcessGroup solo(const std::filesystem::path& dir) {
  dist::RendezvousOptions o;
  o.rank = 0;
  o.world_size = 1;
  o.dir = dir.string();
  o.timeout = std::chrono::seconds(10);
  return dist::ProcessGroup(o);
}

TEST(DistGradientReducer, OneProcessGivesBackwardsGradientsAndZerosForUnusedParameters) {
  const test::TempDir dir;
  dist::ProcessGroup group = solo(dir.path);
  const test::DistMlp model;
  dist::GradientReducer reducer(group, model, {.bucket_bytes = 100});
  EXPECT_EQ(reducer.bucket_count(), 4u);  // in buckets of 100 bytes no two parameters fit together
  const auto [x, y] = test::batch_rows(0, 0, 4);
  // Only fc2 takes part: fc1 gets zeros.
  const Tensor h = relu(detach(model.fc1(x)));
  const Gradients want = backward(nn::cross_entropy(model.fc2(h), y));
  const Gradients got = reducer.backward(model, nn::cross_entropy(model.fc2(h), y));
  for (const Tensor& p : {model.fc2.weight.value(), model.fc2.bias.value()})
    EXPECT_EQ(test::host_values(got.get(p)), test::host_values(want.get(p)));
  for (const Tensor& p : {model.fc1.weight.value(), model.fc1.bias.value()})
    for (double v : test::host_values(got.get(p))) EXPECT_EQ(v, 0.0);
}

struct Wide : nn::Module {
  nn::Linear fc1{512, 512}, fc2{512, 10};  // fc1.weight alone is 1 MiB
  KILN_MODULE(Wide, fc1, fc2)
};

TEST(DistGradientReducer, TheFirstBucketIsSmallAsInPyTorch) {
  const test::TempDir dir;
  dist::ProcessGroup group = solo(dir.path);
  // fc2 and fc1.bias fill the first bucket (1 MiB); fc1.weight would overflow it and starts the next.
  EXPECT_EQ(dist::GradientReducer(group, Wide{}).bucket_count(), 2u);
  EXPECT_EQ(dist::GradientReducer(group, Wide{}, {.first_bucket_bytes = 25 << 20}).bucket_count(), 1u);
}

TEST(DistGradientReducer, AnotherModelIsAClearError) {
  const test::TempDir dir;
  dist::ProcessGroup group = solo(dir.path);
  dist::GradientReducer reducer(group, test::DistMlp(16));
  const test::DistMlp other(12);
  const auto [x, y] = test::batch_rows(0, 0, 4);
  try {
    reducer.backward(other, nn::cross_entropy(other(x), y));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parameter #0 is [12, 6], the reducer was made for [16, 6]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln
