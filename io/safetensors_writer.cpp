// The header is built from the tensors' shapes and dtypes alone, so it is written first and
// each tensor's bytes follow as soon as its value is read: one tensor is in host memory at a
// time, whatever the size of the model.
#include "kiln/io/safetensors_writer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "kiln/io/atomic_file.h"
#include "kiln/io/dtype_conversion.h"
#include "kiln/io/header_json.h"
#include "kiln/io/safetensors_header.h"
#include "kiln/io/tensor_bytes.h"

namespace kiln::io {

namespace {

struct Planned {
  const nn::NamedTensor* source = nullptr;
  FileDType stored = FileDType::F32;
  std::uint64_t begin = 0, end = 0;
};

std::vector<Planned> plan_layout(const std::vector<nn::NamedTensor>& tensors, std::optional<DType> float_dtype,
                                 const std::string& file, const char* op) {
  std::set<std::string_view> names;
  std::vector<Planned> plan;
  plan.reserve(tensors.size());
  for (const nn::NamedTensor& t : tensors) {
    const std::string where = file + ": tensor " + detail::in_quotes(t.name);
    KILN_CHECK(t.tensor.defined(), op, where + " is undefined");
    KILN_CHECK(t.name != "__metadata__", op, file + ": '__metadata__' is reserved for the header's metadata");
    KILN_CHECK(names.insert(t.name).second, op, where + " appears twice");
    const bool convert = float_dtype && is_floating(t.tensor.dtype());
    plan.push_back({&t, file_dtype(convert ? *float_dtype : t.tensor.dtype())});
  }
  // safetensors' serialize order: dtype descending, then name (byte order, as Rust compares).
  std::sort(plan.begin(), plan.end(), [](const Planned& a, const Planned& b) {
    return a.stored != b.stored ? a.stored > b.stored : a.source->name < b.source->name;
  });
  std::uint64_t offset = 0;
  for (Planned& p : plan) {
    p.begin = offset;
    offset += static_cast<std::uint64_t>(p.source->tensor.numel()) * file_dtype_size(p.stored);
    p.end = offset;
  }
  return plan;
}

// The JSON as serde_json writes it (compact; "__metadata__" first, then the tensors in data
// order, each {dtype, shape, data_offsets}), padded with spaces so the data starts 8-aligned.
std::string header_json(const std::vector<Planned>& plan, const std::map<std::string, std::string>& metadata,
                        const std::string& file, const char* op) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  for (const Planned& p : plan) {
    const Shape& shape = p.source->tensor.shape();
    header[p.source->name] = {{"dtype", file_dtype_name(p.stored)},
                              {"shape", std::vector<std::int64_t>(shape.begin(), shape.end())},
                              {"data_offsets", {p.begin, p.end}}};
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {
    throw Error(op, file + ": a tensor name or metadata string is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace

namespace detail {

void write_safetensors(const std::vector<nn::NamedTensor>& tensors, const std::map<std::string, std::string>& metadata,
                       std::optional<DType> float_dtype, const std::filesystem::path& path, const char* op) {
  const std::string file = path.string();
  KILN_CHECK(!float_dtype || is_floating(*float_dtype), op,
             file + ": float_dtype must be a floating dtype, got " + dtype_name(*float_dtype));
  const std::vector<Planned> plan = plan_layout(tensors, float_dtype, file, op);
  const std::string header = header_json(plan, metadata, file, op);

  AtomicFile out(path, op);
  std::byte length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<std::byte>((header.size() >> (8 * i)) & 0xffu);
  out.write(length);
  out.write(std::as_bytes(std::span(header)));
  for (const Planned& p : plan) {
    std::vector<std::byte> bytes;
    try {
      bytes = read_tensor_bytes(p.source->tensor, op);
    } catch (const Error& e) {
      // A value that failed to compute (out of memory, a device lost): the temporary file goes.
      throw Error(op, file + ": tensor " + in_quotes(p.source->name) + " could not be read (" + e.what() +
                          "); the existing file, if any, is unchanged");
    }
    const FileDType held = file_dtype(p.source->tensor.dtype());
    if (held != p.stored) {
      std::vector<std::byte> converted(p.end - p.begin);
      convert_elements(bytes, held, converted, p.stored);
      bytes = std::move(converted);
    }
    KILN_CHECK(bytes.size() == p.end - p.begin, op,
               file + ": tensor " + in_quotes(p.source->name) + " gave " + std::to_string(bytes.size()) +
                   " bytes for " + std::to_string(p.end - p.begin) + " (internal error)");
    out.write(bytes);
  }
  out.commit();
}

}  // namespace detail

void save_file(const std::vector<nn::NamedTensor>& tensors, const std::filesystem::path& path,
               const SaveOptions& options) {
  std::vector<nn::NamedTensor> named = tensors;
  if (!options.prefix.empty())
    for (nn::NamedTensor& t : named) t.name = options.prefix + t.name;
  detail::write_safetensors(named, options.metadata, options.float_dtype, path, "save_file");
}

}  // namespace kiln::io
