// CSV files: the values Python's csv module reads from each valid file (quotes, "" escapes,
// CRLF, blank lines, a line break inside quotes, tabs, class names, regression targets), and
// every malformed file refused with an error naming the file, the line and the field.
#include <set>

#include "data_test_support.h"

namespace kiln::test {
namespace {

data::CsvOptions options_from(const Json& j) {
  data::CsvOptions o;
  if (j.contains("delimiter")) o.delimiter = j["delimiter"].get<std::string>().at(0);
  if (j.contains("header")) o.header = j["header"];
  if (j.contains("label_column")) o.label_column = j["label_column"];
  if (j.contains("label_index")) o.label_index = j["label_index"].get<std::int64_t>();
  if (j.contains("class_names")) o.class_names = j["class_names"].get<std::vector<std::string>>();
  return o;
}

TEST(Csv, ReadsWhatPythonReads) {
  const Json files = load_data_json("csv.json");
  ASSERT_GE(files.size(), 6u);
  for (const auto& [name, ref] : files.items()) {
    SCOPED_TRACE(name);
    data::CsvOptions options = options_from(ref["options"]);
    if (ref["label_kind"] == "value") options.label_kind = data::CsvLabel::value;
    const data::CsvTable table = data::read_csv(data_file("csv/" + name), options);
    EXPECT_EQ(table.rows, ref["rows"].get<std::int64_t>());
    EXPECT_EQ(table.feature_names, ref["feature_names"].get<std::vector<std::string>>());
    EXPECT_EQ(table.features, ref["features"].get<std::vector<float>>());
    EXPECT_EQ(table.labels, ref["labels"].get<std::vector<std::int64_t>>());
    EXPECT_EQ(table.targets, ref["targets"].get<std::vector<float>>());
  }
}

TEST(Csv, RowsBecomeExamples) {
  const Json ref = load_data_json("csv.json")["iris_small.csv"];
  auto ds = data::csv_dataset(data_file("csv/iris_small.csv"), options_from(ref["options"]));
  ASSERT_EQ(ds->size(), 3);
  const data::Example e = ds->get(1);
  EXPECT_EQ(e.shape, Shape({3}));
  EXPECT_EQ(e.features, (std::vector<float>{7.0f, 3.2f, 4.7f}));
  EXPECT_EQ(e.label, 1);
  EXPECT_TRUE(e.target.empty());

  data::CsvOptions regression = options_from(load_data_json("csv.json")["regression.csv"]["options"]);
  regression.label_kind = data::CsvLabel::value;
  auto rows = data::csv_dataset(data_file("csv/regression.csv"), regression);
  data::DataLoader loader(rows, {.batch_size = 3});
  for (data::Batch& b : loader.epoch(0)) {
    EXPECT_EQ(b.inputs.shape(), Shape({3, 2}));
    EXPECT_FALSE(b.labels.defined());
    EXPECT_EQ(values<float>(b.targets), (std::vector<float>{3.5f, -6.25f, 9.0f}));
  }
}

TEST(Csv, TheBadFilesIndexCoversTheDirectory) {
  std::set<std::string> listed, present;
  const Json index = load_data_json("csv_bad.json");
  for (const auto& [name, c] : index.items()) {
    listed.insert(name);
    EXPECT_EQ(c["fragments"].front(), name) << "each error must name its file";
  }
  for (const auto& e : std::filesystem::directory_iterator(data_file("csv_bad")))
    present.insert(e.path().filename().string());
  EXPECT_EQ(listed, present);
  EXPECT_GE(listed.size(), 12u);
}

TEST(Csv, EveryMalformedFileIsAClearError) {
  const Json index = load_data_json("csv_bad.json");
  for (const auto& [name, c] : index.items()) {
    SCOPED_TRACE(name);
    const data::CsvOptions options = options_from(c["options"]);
    expect_error([&] { return data::read_csv(data_file("csv_bad/" + name), options); }, "read_csv",
                 c["fragments"].get<std::vector<std::string>>());
  }
}

TEST(Csv, RefusesContradictoryOptions) {
  data::CsvOptions both;
  both.label_column = "a";
  both.label_index = 0;
  expect_error([&] { return data::read_csv(data_file("csv/regression.csv"), both); }, "read_csv",
               {"regression.csv", "by name or by index, not both"});
  data::CsvOptions no_header{.header = false, .label_column = "y"};
  expect_error([&] { return data::read_csv(data_file("csv/regression.csv"), no_header); }, "read_csv",
               {"needs a header row"});
  expect_error([] { return data::read_csv(data_file("csv/missing.csv")); }, "read_csv",
               {"missing.csv", "cannot open the file"});
}

}  // namespace
}  // namespace kiln::test
