// CSV files of numbers (RFC 4180: a delimiter, "quoted" fields with "" for a quote, line breaks
// inside quotes, \n or \r\n endings, an optional header row; blank lines are skipped), gzipped
// or not. Every column but the label's is a feature and must hold numbers. Errors name the file,
// the line and the column.
//
//   auto rows = data::csv_dataset("iris.csv", {.label_column = "species",
//                                              .class_names = {"setosa", "versicolor", "virginica"}});
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/data/example.h"

namespace kiln::data {

enum class CsvLabel {
  class_index,  // the label column holds class indices (or class_names): Example::label
  value,        // it holds numbers to regress: Example::target = {value}
};

struct CsvOptions {
  char delimiter = ',';
  bool header = true;                         // the first row names the columns
  std::string label_column{};                 // the label's column by header name...
  std::optional<std::int64_t> label_index{};  // ...or by position (0 = first); neither: no label
  CsvLabel label_kind = CsvLabel::class_index;
  std::vector<std::string> class_names{};  // when given, class labels are these names (index = position)
};

// A CSV file parsed into numbers.
struct CsvTable {
  std::vector<std::string> feature_names{};  // from the header; "column 0", ... without one
  std::int64_t rows = 0;
  std::vector<float> features{};       // rows x feature_names.size(), row-major
  std::vector<std::int64_t> labels{};  // one per row with a class label column
  std::vector<float> targets{};        // one per row with a value label column
};

// Throws kiln::Error("read_csv", "<path>:<line>: ...") for a bad number, a ragged row, an
// unclosed quote or an unknown label column.
CsvTable read_csv(const std::filesystem::path& path, const CsvOptions& options = {});

// The rows as Examples of shape [features] (in memory).
DatasetPtr<Example> csv_dataset(const std::filesystem::path& path, const CsvOptions& options = {});

}  // namespace kiln::data
