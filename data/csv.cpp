#include "kiln/data/csv.h"

#include <charconv>
#include <string_view>
#include <system_error>

#include "kiln/data/file_source.h"

namespace kiln::data {

namespace {

constexpr const char* kCsvOp = "read_csv";

struct Record {
  std::int64_t line = 0;  // where the record starts (1-based)
  std::vector<std::string> fields{};
};

// Splits text into records by RFC 4180. `where` prefixes errors ("<path>").
class RecordParser {
 public:
  RecordParser(std::string_view text, char delimiter, std::string where)
      : text_(text), delimiter_(delimiter), where_(std::move(where)) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 byte order mark
  }

  // The next record, or false at the end. Blank lines are skipped.
  bool next(Record& record) {
    while (pos_ < text_.size() && line_end_length() > 0) {
      pos_ += line_end_length();
      ++line_;
    }
    if (pos_ >= text_.size()) return false;
    record.line = line_;
    record.fields.clear();
    for (;;) {
      const bool is_quoted = pos_ < text_.size() && text_[pos_] == '"';
      record.fields.push_back(is_quoted ? quoted(record) : unquoted());
      if (pos_ < text_.size() && text_[pos_] == delimiter_) {
        ++pos_;
        continue;
      }
      pos_ += line_end_length();
      ++line_;
      return true;
    }
  }

 private:
  // 2 at "\r\n", 1 at "\n", else 0.
  std::size_t line_end_length() const {
    if (pos_ < text_.size() && text_[pos_] == '\n') return 1;
    if (pos_ + 1 < text_.size() && text_[pos_] == '\r' && text_[pos_ + 1] == '\n') return 2;
    return 0;
  }

  std::string unquoted() {
    const std::size_t begin = pos_;
    while (pos_ < text_.size() && text_[pos_] != delimiter_ && line_end_length() == 0) ++pos_;
    return std::string(text_.substr(begin, pos_ - begin));
  }

  std::string quoted(const Record& record) {
    const std::int64_t opened = line_;
    const std::size_t field = record.fields.size() + 1;
    std::string value;
    ++pos_;
    for (;;) {
      KILN_CHECK(pos_ < text_.size(), kCsvOp,
                 where_ + ":" + std::to_string(opened) + ": field " + std::to_string(field) +
                     " opens a quote that never closes");
      const char c = text_[pos_];
      if (c == '"') {
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
          value += '"';
          pos_ += 2;
          continue;
        }
        ++pos_;
        break;
      }
      if (c == '\n') ++line_;
      value += c;
      ++pos_;
    }
    KILN_CHECK(pos_ >= text_.size() || text_[pos_] == delimiter_ || line_end_length() > 0, kCsvOp,
               where_ + ":" + std::to_string(line_) + ": field " + std::to_string(field) + " has '" +
                   std::string(1, text_[pos_]) + "' after its closing quote");
    return value;
  }

  std::string_view text_;
  char delimiter_;
  std::string where_;
  std::size_t pos_ = 0;
  std::int64_t line_ = 1;
};

// Whitespace around a value is not part of it (as Python's float() and pandas read it); a quoted
// field may hold a line break.
std::string_view trim(std::string_view s) {
  constexpr const char* kSpace = " \t\r\n";
  const auto first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

// Where a field is, for errors: "<path>:7: field 3 ("petal_width")".
struct FieldPlace {
  const std::string& file;
  const std::vector<std::string>& names;
  std::int64_t line;
  std::size_t column;  // 0-based
  std::string str() const {
    std::string s = file + ":" + std::to_string(line) + ": field " + std::to_string(column + 1);
    if (column < names.size()) s += " (\"" + names[column] + "\")";
    return s;
  }
};

float parse_float(const std::string& field, const FieldPlace& place) {
  std::string_view s = trim(field);
  KILN_CHECK(!s.empty(), kCsvOp, place.str() + ": empty, expected a number");
  if (s.size() > 1 && s[0] == '+') s.remove_prefix(1);  // from_chars takes no plus sign; pandas does
  float value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  KILN_CHECK(ec != std::errc::result_out_of_range, kCsvOp, place.str() + ": '" + field + "' is out of the range of f32");
  KILN_CHECK(ec == std::errc() && end == s.data() + s.size(), kCsvOp, place.str() + ": '" + field + "' is not a number");
  return value;
}

std::int64_t parse_class(const std::string& field, const CsvOptions& options, const FieldPlace& place) {
  const std::string_view s = trim(field);
  if (!options.class_names.empty()) {
    for (std::size_t i = 0; i < options.class_names.size(); ++i)
      if (s == options.class_names[i]) return static_cast<std::int64_t>(i);
    std::string known;
    for (const std::string& name : options.class_names) known += (known.empty() ? "" : ", ") + name;
    throw Error(kCsvOp, place.str() + ": '" + field + "' is not one of the class names [" + known + "]");
  }
  std::int64_t value = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  KILN_CHECK(ec == std::errc() && end == s.data() + s.size() && value >= 0, kCsvOp,
             place.str() + ": '" + field + "' is not a class index (a whole number, 0 or more)");
  return value;
}

// The label's column among `width`, or -1 for none.
std::int64_t label_position(const CsvOptions& options, const std::vector<std::string>& header, std::size_t width,
                            const std::string& file) {
  KILN_CHECK(options.label_column.empty() || !options.label_index, kCsvOp,
             file + ": give the label column by name or by index, not both");
  if (!options.label_column.empty()) {
    KILN_CHECK(options.header, kCsvOp, file + ": label column \"" + options.label_column + "\" needs a header row");
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == options.label_column) return static_cast<std::int64_t>(i);
    throw Error(kCsvOp, file + ": no column named \"" + options.label_column + "\" in the header");
  }
  if (!options.label_index) return -1;
  const std::int64_t index = *options.label_index;
  KILN_CHECK(index >= 0 && index < static_cast<std::int64_t>(width), kCsvOp,
             file + ": label index " + std::to_string(index) + " is out of range for rows of " + std::to_string(width) +
                 " fields");
  return index;
}

}  // namespace

CsvTable read_csv(const std::filesystem::path& path, const CsvOptions& options) {
  const std::string file = path.string();
  KILN_CHECK(options.delimiter != '"' && options.delimiter != '\n' && options.delimiter != '\r', kCsvOp,
             file + ": the delimiter cannot be a quote or a line break");
  const std::vector<std::byte> bytes = detail::read_whole_file(path, kCsvOp);
  RecordParser parser(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), options.delimiter,
                      file);

  Record record;
  std::vector<std::string> header;
  std::int64_t width_line = 0;  // the line whose field count every row must have
  std::size_t width = 0;
  const bool any = parser.next(record);
  KILN_CHECK(any || !options.header, kCsvOp, file + ": empty, expected a header row");
  if (any) {
    width = record.fields.size();
    width_line = record.line;
    if (options.header) header = record.fields;
  }
  const std::int64_t label = label_position(options, header, width, file);

  CsvTable table;
  for (std::size_t i = 0; i < header.size(); ++i)
    if (static_cast<std::int64_t>(i) != label) table.feature_names.push_back(header[i]);
  bool have_row = any && !options.header;  // without a header, the first record is a row
  if (!have_row) have_row = parser.next(record);
  for (; have_row; have_row = parser.next(record)) {
    KILN_CHECK(record.fields.size() == width, kCsvOp,
               file + ":" + std::to_string(record.line) + ": " + std::to_string(record.fields.size()) +
                   " fields, expected " + std::to_string(width) + " (as on line " + std::to_string(width_line) + ")");
    for (std::size_t c = 0; c < width; ++c) {
      const FieldPlace place{file, header, record.line, c};
      if (static_cast<std::int64_t>(c) != label)
        table.features.push_back(parse_float(record.fields[c], place));
      else if (options.label_kind == CsvLabel::class_index)
        table.labels.push_back(parse_class(record.fields[c], options, place));
      else
        table.targets.push_back(parse_float(record.fields[c], place));
    }
    ++table.rows;
  }
  return table;
}

DatasetPtr<Example> csv_dataset(const std::filesystem::path& path, const CsvOptions& options) {
  const CsvTable table = read_csv(path, options);
  const std::size_t width = table.rows == 0 ? 0 : table.features.size() / static_cast<std::size_t>(table.rows);
  std::vector<Example> examples(static_cast<std::size_t>(table.rows));
  for (std::size_t r = 0; r < examples.size(); ++r) {
    Example& e = examples[r];
    e.features.assign(table.features.begin() + static_cast<std::ptrdiff_t>(r * width),
                      table.features.begin() + static_cast<std::ptrdiff_t>((r + 1) * width));
    e.shape = Shape{static_cast<std::int64_t>(width)};
    if (!table.labels.empty()) e.label = table.labels[r];
    if (!table.targets.empty()) e.target = {table.targets[r]};
  }
  return in_memory(std::move(examples));
}

}  // namespace kiln::data
