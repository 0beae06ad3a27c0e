// IDX files: every type code, plain and gzipped, read as numpy wrote them; every malformed file
// of tests/data/datasets/idx_bad refused with an error naming the file and the problem; the
// MNIST pairing checks; and Debian's Fashion-MNIST against values Python read from it.
#include <set>

#include "data_test_support.h"

namespace kiln::test {
namespace {

TEST(Idx, ReadsEveryTypePlainAndGzipped) {
  const Json files = load_data_json("idx.json");
  ASSERT_GE(files.size(), 16u);
  for (const auto& [name, ref] : files.items()) {
    SCOPED_TRACE(name);
    const data::IdxFile idx(data_file("idx/" + name));
    EXPECT_EQ(idx_type_name(idx.type()), ref["type"].get<std::string>());
    EXPECT_EQ(idx.dims(), ref["dims"].get<std::vector<std::int64_t>>());
    const std::vector<double> want = ref["values"].get<std::vector<double>>();
    std::vector<double> got;
    for (std::int64_t r = 0; r < idx.records(); ++r) {
      if (ref["type"] == "f32" || ref["type"] == "f64") {
        for (float v : idx.record_floats(r)) got.push_back(v);
      } else {
        for (std::int64_t v : idx.record_ints(r)) got.push_back(static_cast<double>(v));
      }
    }
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (ref["type"] == "f64")
        EXPECT_EQ(got[i], static_cast<double>(static_cast<float>(want[i]))) << i;
      else
        EXPECT_EQ(got[i], want[i]) << i;
    }
  }
}

TEST(Idx, RecordsAreBoundsCheckedAndTyped) {
  const data::IdxFile labels(data_file("idx/labels-idx1-ubyte.gz"));
  EXPECT_EQ(labels.records(), 5);
  EXPECT_EQ(labels.scalar_int(2), 9);
  expect_error([&] { return labels.record_floats(5); }, "IdxFile::record_floats",
               {"labels-idx1-ubyte.gz", "record 5 is out of range (the file holds 5)"});
  const data::IdxFile floats(data_file("idx/f32.idx"));
  expect_error([&] { return floats.record_ints(0); }, "IdxFile::record_ints", {"f32.idx", "f32 values"});
  const data::IdxFile images(data_file("idx/images-idx3-ubyte"));
  EXPECT_EQ(images.record_shape(), Shape({4, 3}));
  expect_error([&] { return images.scalar_int(0); }, "IdxFile::scalar_int", {"[4, 3]", "not single values"});
  expect_error([] { return data::IdxFile(data_file("idx/no_such_file")); }, "read_idx",
               {"no_such_file", "cannot open the file"});
  expect_error([] { return data::IdxFile(data_file("idx")); }, "read_idx", {"not a regular file"});
}

TEST(Idx, TheBadFilesIndexCoversTheDirectory) {
  std::set<std::string> listed, present;
  const Json index = load_data_json("idx_bad.json");
  for (const auto& [name, fragments] : index.items()) {
    listed.insert(name);
    EXPECT_EQ(fragments.front(), name) << "each error must name its file";
  }
  for (const auto& e : std::filesystem::directory_iterator(data_file("idx_bad")))
    present.insert(e.path().filename().string());
  EXPECT_EQ(listed, present);
  EXPECT_GE(listed.size(), 18u);
}

TEST(Idx, EveryMalformedFileIsAClearError) {
  const Json index = load_data_json("idx_bad.json");
  for (const auto& [name, fragments] : index.items()) {
    SCOPED_TRACE(name);
    expect_error([&] { return data::IdxFile(data_file("idx_bad/" + name)); }, "read_idx",
                 fragments.get<std::vector<std::string>>());
  }
}

TEST(Mnist, ReadsImagesAsUnitFloatsWithTheirLabels) {
  const Json ref = load_data_json("idx.json");
  for (const char* suffix : {"", ".gz"}) {
    SCOPED_TRACE(suffix);
    auto ds = data::mnist_dataset(data_file(std::string("idx/images-idx3-ubyte") + suffix),
                                  data_file(std::string("idx/labels-idx1-ubyte") + suffix));
    ASSERT_EQ(ds->size(), 5);
    const std::vector<double> pixels = ref["images-idx3-ubyte"]["values"].get<std::vector<double>>();
    const std::vector<double> labels = ref["labels-idx1-ubyte"]["values"].get<std::vector<double>>();
    for (std::int64_t i = 0; i < 5; ++i) {
      const data::Example e = ds->get(i);
      EXPECT_EQ(e.shape, Shape({1, 4, 3}));
      EXPECT_EQ(e.label, static_cast<std::int64_t>(labels[static_cast<std::size_t>(i)]));
      for (std::size_t k = 0; k < 12; ++k)
        EXPECT_EQ(e.features[k], static_cast<float>(pixels[static_cast<std::size_t>(i) * 12 + k]) / 255.0f);
    }
  }
}

TEST(Mnist, RefusesFilesThatDoNotMakeAPair) {
  const Json pairs = load_data_json("mnist_bad.json");
  ASSERT_GE(pairs.size(), 5u);
  for (const auto& [name, c] : pairs.items()) {
    SCOPED_TRACE(name);
    expect_error(
        [&] {
          return data::mnist_dataset(data_file("mnist_bad/" + c["images"].get<std::string>()),
                                     data_file("mnist_bad/" + c["labels"].get<std::string>()));
        },
        "mnist_dataset", c["fragments"].get<std::vector<std::string>>());
  }
  expect_error([] { return data::mnist_split(data_file("idx"), data::Split::train); }, "mnist_split",
               {"train-images-idx3-ubyte[.gz]: no such file"});
}

// Debian's dataset-fashion-mnist: a missing package is a failure, never a skip.
void expect_matches_python(const data::DatasetPtr<data::Example>& ds, const Json& ref) {
  ASSERT_EQ(ds->size(), ref["image_dims"][0].get<std::int64_t>());
  EXPECT_EQ(ref["image_magic"], 0x803);
  EXPECT_EQ(ref["label_magic"], 0x801);
  const std::vector<std::int64_t> first = ref["first_labels"].get<std::vector<std::int64_t>>();
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(ds->get(static_cast<std::int64_t>(i)).label, first[i]) << i;
  EXPECT_EQ(ds->get(ds->size() - 1).label, ref["last_label"].get<std::int64_t>());
  for (const Json& p : ref["pixels"]) {
    const data::Example e = ds->get(p["image"]);
    EXPECT_EQ(e.shape, Shape({1, 28, 28}));
    const std::size_t at = p["row"].get<std::size_t>() * 28 + p["col"].get<std::size_t>();
    EXPECT_EQ(e.features[at], p["value"].get<float>() / 255.0f) << p.dump();
  }
  double sum = 0;
  for (float v : ds->get(0).features) sum += v * 255.0;
  EXPECT_NEAR(sum, ref["image0_sum"].get<double>(), 1e-2);
}

void require_fashion_mnist() {
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                        "t10k-labels-idx1-ubyte.gz"})
    ASSERT_TRUE(std::filesystem::exists(data::kDebianFashionMnist / f))
        << data::kDebianFashionMnist / f << " is missing: run ./dev (it installs Debian's dataset-fashion-mnist)";
}

TEST(FashionMnist, TestSplitMatchesPython) {
  ASSERT_NO_FATAL_FAILURE(require_fashion_mnist());
  expect_matches_python(data::fashion_mnist(data::Split::test), load_data_json("fashion_mnist.json")["t10k"]);
}

TEST(FashionMnist, TrainSplitMatchesPython) {
  ASSERT_NO_FATAL_FAILURE(require_fashion_mnist());
  expect_matches_python(data::fashion_mnist(data::Split::train), load_data_json("fashion_mnist.json")["train"]);
}

TEST(FashionMnist, LoadsThroughTheLoader) {
  ASSERT_NO_FATAL_FAILURE(require_fashion_mnist());
  data::DataLoader loader(data::fashion_mnist(data::Split::test),
                          {.batch_size = 1000, .shuffle = true, .seed = 3, .workers = 2});
  ASSERT_EQ(loader.num_batches(), 10);
  std::vector<std::int64_t> counts(10, 0);
  for (data::Batch& b : loader.epoch(0)) {
    EXPECT_EQ(b.inputs.shape(), Shape({1000, 1, 28, 28}));
    for (std::int64_t label : values<std::int64_t>(b.labels)) ++counts.at(static_cast<std::size_t>(label));
  }
  EXPECT_EQ(counts, load_data_json("fashion_mnist.json")["t10k"]["label_counts"].get<std::vector<std::int64_t>>());
  expect_error([] { return data::fashion_mnist(data::Split::test, data_file("csv")); }, "fashion_mnist",
               {"t10k-images-idx3-ubyte[.gz]: no such file"});
}

}  // namespace
}  // namespace kiln::test
