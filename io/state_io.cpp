// Numbers are written with std::to_chars (shortest round-trip form, independent of the C
// locale, unlike printf's "%.17g" under a locale with a decimal comma) and read with
// std::from_chars, which must consume the whole string.
#include "kiln/io/state_io.h"

#include <algorithm>
#include <charconv>

#include "kiln/io/header_json.h"
#include "kiln/io/safetensors_writer.h"

namespace kiln::io {

namespace {

constexpr const char* kStateFormat = "kiln.optim.State";

}  // namespace

namespace detail {

std::string format_number(double value) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : std::string("nan");
}

std::optional<double> parse_number(std::string_view text) {
  double value = 0.0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || end != last || text.empty()) return std::nullopt;
  return value;
}

void add_state(const optim::State& state, const std::string& prefix, std::vector<nn::NamedTensor>& tensors,
               std::map<std::string, std::string>& metadata, const std::string& file, const char* op) {
  for (const nn::NamedTensor& t : state.tensors) tensors.push_back({prefix + t.name, t.tensor});
  for (const auto& [name, value] : state.numbers) {
    const bool added = metadata.emplace(prefix + name, format_number(value)).second;
    KILN_CHECK(added, op, file + ": the state's number " + in_quotes(prefix + name) + " clashes with a reserved key");
  }
}

optim::State read_state(const SafeTensorsFile& file, const std::string& prefix,
                        const std::vector<std::string>& reserved, Device device, const char* op) {
  optim::State state;
  for (const auto& [key, text] : file.metadata()) {
    if (!key.starts_with(prefix) || std::find(reserved.begin(), reserved.end(), key) != reserved.end()) continue;
    const std::optional<double> value = parse_number(text);
    KILN_CHECK(value.has_value(), op,
               file.path().string() + ": metadata " + in_quotes(key) + " holds " + in_quotes(text) + ", not a number");
    state.numbers.emplace(key.substr(prefix.size()), *value);
  }
  const TensorLoadOptions options{device};
  for (const TensorInfo& t : file.tensors()) {
    if (!t.name.starts_with(prefix)) continue;
    const std::optional<DType> dtype = SafeTensorsFile::load_dtype(t, options);
    KILN_CHECK(
        dtype.has_value(), op,
        file.path().string() + ": tensor " + in_quotes(t.name) + ": kiln has no dtype for " + file_dtype_name(t.dtype));
    state.tensors.push_back({t.name.substr(prefix.size()), file.tensor_as(t, *dtype, device, false, op)});
  }
  return state;
}

}  // namespace detail

void save_state(const optim::State& state, const std::filesystem::path& path) {
  std::vector<nn::NamedTensor> tensors;
  std::map<std::string, std::string> metadata{{"format", kStateFormat}};
  detail::add_state(state, "", tensors, metadata, path.string(), "save_state");
  detail::write_safetensors(tensors, metadata, std::nullopt, path, "save_state");
}

optim::State load_state(const std::filesystem::path& path, Device device) {
  const char* op = "load_state";
  const SafeTensorsFile file(path, op);
  const auto format = file.metadata().find("format");
  KILN_CHECK(format != file.metadata().end() && format->second == kStateFormat, op,
             path.string() + ": not an optimizer or scheduler state (its metadata has no \"format\": \"" +
                 kStateFormat + "\")");
  return detail::read_state(file, "", {"format"}, device, op);
}

}  // namespace kiln::io
