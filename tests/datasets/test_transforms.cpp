// Transforms against what PyTorch computes (tests/data/datasets/refs.json): Normalize, the
// geometry of RandomCrop with padding at given corners, horizontal flip, one-hot. The random
// ones are checked for their distribution and their dependence on the seed alone.
#include <set>

#include "data_test_support.h"

namespace kiln::test {
namespace {

data::Example image_from(const Json& ref) {
  data::Example e;
  e.features = floats(ref["input"]);
  e.shape = Shape(ref["shape"].get<std::vector<std::int64_t>>());
  e.label = 3;
  return e;
}

::testing::AssertionResult same_values(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol))
      return ::testing::AssertionFailure() << "value " << i << ": " << got[i] << ", expected " << want[i];
  return ::testing::AssertionSuccess();
}

TEST(Transforms, NormalizeMatchesTorchvision) {
  const Json ref = load_data_json("refs.json")["normalize"];
  const data::Normalize normalize{floats(ref["mean"]), floats(ref["std"])};
  const data::Example out = normalize(image_from(ref));
  EXPECT_EQ(out.shape, Shape({3, 4, 5}));
  EXPECT_EQ(out.label, 3);
  EXPECT_TRUE(same_values(out.features, floats(ref["output"]), 1e-6f));
}

TEST(Transforms, NormalizeChecksItsSettings) {
  const Json ref = load_data_json("refs.json")["normalize"];
  expect_error(
      [&] {
        return data::Normalize{{0.5f, 0.5f}, {0.2f, 0.2f}}(image_from(ref));
      },
      "Normalize", {"2 means", "[3, 4, 5]", "3 channels"});
  expect_error([&] { return data::Normalize{{0.5f}, {0.0f}}(image_from(ref)); }, "Normalize", {"std must not be zero"});
  expect_error([&] { return data::Normalize{{0.5f}, {}}(image_from(ref)); }, "Normalize", {"same number"});
  // One mean and std for all channels.
  const data::Example out = data::Normalize{{0.5f}, {2.0f}}(image_from(ref));
  EXPECT_FLOAT_EQ(out.features[59], (image_from(ref).features[59] - 0.5f) / 2.0f);
}

TEST(Transforms, CropAtACornerMatchesPadThenSlice) {
  const Json ref = load_data_json("refs.json")["crop"];
  ASSERT_GE(ref["cases"].size(), 5u);
  for (const Json& c : ref["cases"]) {
    SCOPED_TRACE(c.dump().substr(0, 80));
    const data::RandomCrop crop({c["size"][0], c["size"][1]}, c["padding"], c["fill"]);
    const data::Example out = crop.crop_at(image_from(ref), c["top"], c["left"]);
    EXPECT_EQ(out.shape, Shape(c["shape"].get<std::vector<std::int64_t>>()));
    EXPECT_EQ(out.label, 3);
    EXPECT_TRUE(same_values(out.features, floats(c["output"]), 0.0f));
  }
}

TEST(Transforms, RandomCropReachesEveryCornerAndFollowsTheSeed) {
  const Json ref = load_data_json("refs.json")["crop"];
  const data::Example image = image_from(ref);  // [2, 5, 6]
  const data::RandomCrop crop({4, 5}, 2);       // corners in [0, 5] x [0, 5]
  std::set<std::vector<float>> seen;
  for (std::uint64_t seed = 0; seed < 2000; ++seed) {
    data::Rng rng(seed);
    seen.insert(crop(image, rng).features);
  }
  EXPECT_EQ(seen.size(), 36u);
  data::Rng a(77), b(77);
  EXPECT_EQ(crop(image, a).features, crop(image, b).features);
}

TEST(Transforms, CropRefusesWhatDoesNotFit) {
  const Json ref = load_data_json("refs.json")["crop"];
  const data::Example image = image_from(ref);
  data::Rng rng(0);
  expect_error([&] { return data::RandomCrop(10, 2)(image, rng); }, "RandomCrop",
               {"a crop of [10, 10] does not fit an image of [2, 5, 6] padded by 2"});
  expect_error(
      [&] {
        return data::RandomCrop({4, 5}, 2).crop_at(image, 6, 0);
      },
      "RandomCrop", {"the corner (6, 0)", "[9, 10]"});
  data::Example flat;
  flat.features = {1, 2, 3};
  flat.shape = Shape{3};
  expect_error([&] { return data::RandomCrop(1)(flat, rng); }, "RandomCrop", {"[C, H, W]", "[3]"});
}

TEST(Transforms, HorizontalFlipMatchesTorchFlip) {
  const Json ref = load_data_json("refs.json")["flip"];
  EXPECT_TRUE(same_values(data::horizontal_flip(image_from(ref)).features, floats(ref["output"]), 0.0f));
}

TEST(Transforms, RandomHorizontalFlipFlipsWithProbabilityP) {
  const Json ref = load_data_json("refs.json")["flip"];
  const data::Example image = image_from(ref);
  const std::vector<float> flipped = floats(ref["output"]);
  int flips = 0;
  for (std::uint64_t seed = 0; seed < 4000; ++seed) {
    data::Rng rng(seed);
    const data::Example out = data::RandomHorizontalFlip{0.25}(image, rng);
    if (out.features == flipped)
      ++flips;
    else
      ASSERT_EQ(out.features, image.features);
  }
  EXPECT_NEAR(flips, 1000, 150);
  data::Rng rng(1);
  EXPECT_EQ(data::RandomHorizontalFlip{1.0}(image, rng).features, flipped);
  EXPECT_EQ(data::RandomHorizontalFlip{0.0}(image, rng).features, image.features);
}

TEST(Transforms, OneHotMatchesTorch) {
  const Json ref = load_data_json("refs.json")["one_hot"];
  const std::vector<float> want = floats(ref["output"]);
  const std::int64_t classes = ref["num_classes"];
  std::size_t row = 0;
  for (std::int64_t label : ref["labels"].get<std::vector<std::int64_t>>()) {
    data::Example e;
    e.label = label;
    const data::Example out = data::OneHot{classes}(e);
    EXPECT_EQ(out.label, label);
    EXPECT_EQ(out.target, std::vector<float>(want.begin() + static_cast<std::ptrdiff_t>(row * classes),
                                             want.begin() + static_cast<std::ptrdiff_t>((row + 1) * classes)));
    ++row;
  }
  data::Example bad;
  bad.label = 10;
  expect_error([&] { return data::OneHot{10}(bad); }, "OneHot", {"label 10 is outside [0, 10)"});
}

TEST(Transforms, ComposeAppliesInOrderSharingTheRng) {
  const Json ref = load_data_json("refs.json")["crop"];
  auto pipeline = data::compose(data::RandomCrop({4, 5}, 2), data::RandomHorizontalFlip{1.0}, [](data::Example e) {
    for (float& v : e.features) v *= 2;
    return e;
  });
  data::Rng a(5), b(5);
  const data::Example out = pipeline(image_from(ref), a);
  data::Example expected = data::horizontal_flip(data::RandomCrop({4, 5}, 2)(image_from(ref), b));
  for (float& v : expected.features) v *= 2;
  EXPECT_EQ(out.features, expected.features);
  EXPECT_EQ(out.shape, Shape({2, 4, 5}));
}

}  // namespace
}  // namespace kiln::test
