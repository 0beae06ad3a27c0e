// The DataLoader: batch counts against torch.utils.data.DataLoader, batches identical (order,
// contents, random transforms) for any number of workers, a new order each epoch with every item
// once, an early break that joins the workers, and errors reaching the consumer at their batch.
#include <atomic>
#include <numeric>
#include <set>
#include <stdexcept>

#include "data_test_support.h"

namespace kiln::test {
namespace {

using namespace std::chrono_literals;

// Item i: a [1, 2, 3] image whose values are i*10 + 0..5, labelled i.
data::DatasetPtr<data::Example> indexed_images(std::int64_t n) {
  return data::lazy(n, [](std::int64_t i) {
    data::Example e;
    e.shape = Shape{1, 2, 3};
    for (int k = 0; k < 6; ++k) e.features.push_back(static_cast<float>(i * 10 + k));
    e.label = i;
    return e;
  });
}

// The same images through random transforms: a crop with padding, a flip, noise.
data::DatasetPtr<data::Example> augmented(std::int64_t n) {
  return data::map(indexed_images(n), data::compose(data::RandomCrop({2, 3}, 1), data::RandomHorizontalFlip{},
                                                    [](data::Example e, data::Rng& rng) {
                                                      for (float& v : e.features)
                                                        v += static_cast<float>(rng.uniform());
                                                      return e;
                                                    }));
}

struct HostBatch {
  std::vector<float> inputs;
  std::vector<std::int64_t> labels;
  std::vector<std::int64_t> input_shape;
  bool operator==(const HostBatch&) const = default;
};

std::vector<HostBatch> run_epoch(const data::DataLoader<>& loader, std::int64_t epoch) {
  std::vector<HostBatch> out;
  for (data::Batch& b : loader.epoch(epoch)) {
    EXPECT_EQ(b.inputs.device(), loader.options().device);
    out.push_back({values<float>(b.inputs), values<std::int64_t>(b.labels), b.inputs.shape().to_vector()});
  }
  return out;
}

std::vector<std::int64_t> labels_of(const std::vector<HostBatch>& batches) {
  std::vector<std::int64_t> all;
  for (const HostBatch& b : batches) all.insert(all.end(), b.labels.begin(), b.labels.end());
  return all;
}

TEST(DataLoader, BatchCountsMatchTorch) {
  const Json refs = load_data_json("refs.json");
  ASSERT_GE(refs["batch_counts"].size(), 10u);
  for (const Json& c : refs["batch_counts"]) {
    SCOPED_TRACE(c.dump());
    data::DataLoader loader(indexed_images(c["n"]), {.batch_size = c["batch_size"], .drop_last = c["drop_last"]});
    EXPECT_EQ(loader.num_batches(), c["batches"].get<std::int64_t>());
    const std::vector<HostBatch> batches = run_epoch(loader, 0);
    ASSERT_EQ(static_cast<std::int64_t>(batches.size()), c["batches"].get<std::int64_t>());
    if (!batches.empty()) {
      EXPECT_EQ(static_cast<std::int64_t>(batches.back().labels.size()), c["last_size"]);
    }
  }
}

TEST(DataLoader, WithoutShuffleBatchesFollowTheDataset) {
  data::DataLoader loader(indexed_images(5), {.batch_size = 2});
  const std::vector<HostBatch> batches = run_epoch(loader, 3);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].input_shape, (std::vector<std::int64_t>{2, 1, 2, 3}));
  EXPECT_EQ(batches[0].labels, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(batches[2].labels, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(batches[2].input_shape, (std::vector<std::int64_t>{1, 1, 2, 3}));
  std::vector<float> expected(12);
  std::iota(expected.begin(), expected.begin() + 6, 0.0f);
  std::iota(expected.begin() + 6, expected.end(), 10.0f);
  EXPECT_EQ(batches[0].inputs, expected);
}

TEST(DataLoader, TheSameSeedGivesTheSameBatchesForAnyNumberOfWorkers) {
  within(120s, [] {
    data::LoaderOptions options{.batch_size = 7, .shuffle = true, .seed = 1234};
    options.workers = 0;
    const std::vector<HostBatch> reference = run_epoch(data::DataLoader(augmented(50), options), 2);
    ASSERT_EQ(reference.size(), 8u);
    for (int workers : {1, 2, 4}) {
      for (int prefetch : {1, 3}) {
        SCOPED_TRACE("workers " + std::to_string(workers) + ", prefetch " + std::to_string(prefetch));
        options.workers = workers;
        options.prefetch = prefetch;
        EXPECT_EQ(run_epoch(data::DataLoader(augmented(50), options), 2), reference);
      }
    }
  });
}

TEST(DataLoader, EpochsAndSeedsChangeTheOrderAndEveryItemComesOnce) {
  data::DataLoader loader(indexed_images(40), {.batch_size = 8, .shuffle = true, .seed = 5, .workers = 2});
  std::set<std::vector<std::int64_t>> orders;
  for (std::int64_t epoch = 0; epoch < 4; ++epoch) {
    std::vector<std::int64_t> order = labels_of(run_epoch(loader, epoch));
    EXPECT_EQ(order, loader.order(epoch));
    orders.insert(order);
    std::sort(order.begin(), order.end());
    std::vector<std::int64_t> all(40);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(order, all) << "epoch " << epoch;
  }
  EXPECT_EQ(orders.size(), 4u);
  data::DataLoader other_seed(indexed_images(40), {.batch_size = 8, .shuffle = true, .seed = 6});
  EXPECT_NE(other_seed.order(0), loader.order(0));
  EXPECT_EQ(labels_of(run_epoch(loader, 1)), loader.order(1)) << "an epoch runs again the same";
}

TEST(DataLoader, AnEpochResumesAtABatch) {
  for (int workers : {0, 2}) {
    data::DataLoader loader(augmented(30), {.batch_size = 4, .shuffle = true, .seed = 8, .workers = workers});
    const std::vector<HostBatch> whole = run_epoch(loader, 1);
    std::vector<HostBatch> rest;
    for (data::Batch& b : loader.epoch(1, 5))
      rest.push_back({values<float>(b.inputs), values<std::int64_t>(b.labels), b.inputs.shape().to_vector()});
    EXPECT_EQ(rest, std::vector<HostBatch>(whole.begin() + 5, whole.end()));
    int none = 0;
    for ([[maybe_unused]] data::Batch& b : loader.epoch(1, loader.num_batches())) ++none;
    EXPECT_EQ(none, 0);
    expect_error([&] { return loader.epoch(1, 9); }, "DataLoader", {"first batch 9 is outside an epoch of 8 batches"});
  }
}

TEST(DataLoader, RandomTransformsChangeWithTheEpoch) {
  data::DataLoader loader(augmented(12), {.batch_size = 12});
  EXPECT_NE(run_epoch(loader, 0)[0].inputs, run_epoch(loader, 1)[0].inputs);
  EXPECT_EQ(run_epoch(loader, 1)[0].inputs, run_epoch(loader, 1)[0].inputs);
}

TEST(DataLoader, BreakingOutEarlyJoinsTheWorkers) {
  within(60s, [] {
    std::atomic<int> built{0};
    auto counted = data::map(indexed_images(1000), [&built](data::Example e) {
      built.fetch_add(1, std::memory_order_relaxed);
      return e;
    });
    data::DataLoader loader(counted, {.batch_size = 4, .workers = 4, .prefetch = 2});
    for (int round = 0; round < 20; ++round) {
      int taken = 0;
      for (data::Batch& b : loader.epoch(round)) {
        EXPECT_EQ(b.size(), 4);
        if (++taken == 2) break;
      }
    }
    // At most 2 batches taken plus 8 ahead (4 workers x prefetch 2) plus the 4 being built per
    // round: the workers never ran through the epoch.
    EXPECT_LE(built.load(), 20 * (2 + 8 + 4) * 4);
    // A run that is never iterated starts and stops its workers too.
    { auto unused = loader.epoch(0); }
  });
}

TEST(DataLoader, AThrowingTransformReachesTheConsumerAtItsBatch) {
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE("workers " + std::to_string(workers));
    within(60s, [workers] {
      auto failing = data::map(indexed_images(20), [](data::Example e) {
        if (e.label == 13) throw std::runtime_error("cannot decode item 13");
        return e;
      });
      data::DataLoader loader(failing, {.batch_size = 4, .workers = workers});
      std::vector<std::int64_t> delivered;
      try {
        for (data::Batch& b : loader.epoch(0)) {
          const auto labels = values<std::int64_t>(b.labels);
          delivered.insert(delivered.end(), labels.begin(), labels.end());
        }
        ADD_FAILURE() << "expected kiln::Error";
      } catch (const Error& e) {
        EXPECT_EQ(e.op(), "DataLoader");
        EXPECT_NE(std::string(e.what()).find("batch 3 of epoch 0: cannot decode item 13"), std::string::npos)
            << e.what();
      }
      EXPECT_EQ(delivered.size(), 12u) << "the batches before the failing one arrive";
    });
  }
}

TEST(DataLoader, AKilnErrorKeepsItsMessage) {
  auto ragged = data::lazy(6, [](std::int64_t i) {
    data::Example e;
    e.shape = Shape{i == 4 ? 3 : 2};
    e.features.assign(static_cast<std::size_t>(e.shape[0]), 1.0f);
    e.label = 0;
    return e;
  });
  data::DataLoader loader(ragged, {.batch_size = 3, .workers = 2});
  expect_error([&] { return run_epoch(loader, 0); }, "DataLoader",
               {"batch 1 of epoch 0", "stack_examples", "example 1 (shape [3]", "differs from example 0 (shape [2]"});
}

TEST(DataLoader, ChecksItsOptions) {
  expect_error([] { return data::DataLoader(indexed_images(3), {.batch_size = 0}); }, "DataLoader",
               {"batch_size must be positive, got 0"});
  expect_error([] { return data::DataLoader(indexed_images(3), {.workers = -1}); }, "DataLoader", {"-1 workers"});
  expect_error([] { return data::DataLoader(indexed_images(3), {.prefetch = 0}); }, "DataLoader", {"prefetch 0"});
  expect_error([] { return data::DataLoader<data::Example>(nullptr, {}); }, "DataLoader", {"the dataset is null"});
  expect_error([] { return data::DataLoader<std::int64_t, int>(data::lazy(3, [](std::int64_t i) { return i; }), {}); },
               "DataLoader", {"no batcher"});
}

TEST(DataLoader, ACustomBatcherTakesOtherItems) {
  auto ds = data::lazy(10, [](std::int64_t i) { return static_cast<float>(i) * 0.5f; });
  data::DataLoader<float, Tensor> loader(ds, {.batch_size = 4, .workers = 2}, [](std::vector<float> items, Device d) {
    const auto n = static_cast<std::int64_t>(items.size());
    return from_vector(std::move(items), Shape{n}, d);
  });
  std::vector<float> all;
  for (Tensor& t : loader.epoch(0)) {
    const auto v = values<float>(t);
    all.insert(all.end(), v.begin(), v.end());
  }
  EXPECT_EQ(all, (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f, 4, 4.5f}));
}

TEST(StackExamples, BuildsInputsLabelsAndTargets) {
  std::vector<data::Example> examples(2);
  examples[0] = {{1, 2, 3, 4}, Shape{2, 2}, 7, {0.5f}};
  examples[1] = {{5, 6, 7, 8}, Shape{2, 2}, 1, {-1.5f}};
  const data::Batch b = data::stack_examples(examples);
  EXPECT_EQ(b.size(), 2);
  EXPECT_EQ(b.inputs.shape(), Shape({2, 2, 2}));
  EXPECT_EQ(b.inputs.dtype(), DType::f32);
  EXPECT_EQ(values<float>(b.inputs), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(b.labels.dtype(), DType::i64);
  EXPECT_EQ(values<std::int64_t>(b.labels), (std::vector<std::int64_t>{7, 1}));
  EXPECT_EQ(b.targets.shape(), Shape({2, 1}));
  EXPECT_EQ(values<float>(b.targets), (std::vector<float>{0.5f, -1.5f}));

  examples[1].label = -1;
  expect_error([&] { return data::stack_examples(examples); }, "stack_examples", {"example 1", "no label"});
  examples[1].label = 1;
  examples[1].features.pop_back();
  expect_error([&] { return data::stack_examples(examples); }, "stack_examples",
               {"example 1 has 3 values, but its shape [2, 2] holds 4"});
  expect_error([] { return data::stack_examples({}); }, "stack_examples", {"no examples"});
  examples = {data::Example{{1}, Shape{1}, -1, {}}};
  const data::Batch unlabelled = data::stack_examples(examples);
  EXPECT_FALSE(unlabelled.labels.defined());
  EXPECT_FALSE(unlabelled.targets.defined());
}

}  // namespace
}  // namespace kiln::test
