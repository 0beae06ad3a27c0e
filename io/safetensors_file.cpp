// The file stays mapped for the life of the SafeTensorsFile (shared by its copies); a tensor's
// bytes are copied once, from the mapping into the buffer its upload hands to the device.
#include "kiln/io/safetensors_file.h"

#include <unordered_map>

#include "kiln/io/dtype_conversion.h"
#include "kiln/io/header_json.h"
#include "kiln/engine/mapped_file.h"
#include "kiln/io/tensor_bytes.h"

namespace kiln::io {

struct SafeTensorsFile::Impl {
  std::filesystem::path path;
  MappedFile file;
  SafetensorsHeader header;
  std::unordered_map<std::string_view, std::size_t> index;  // views into header.tensors' names

  Impl(const std::filesystem::path& p, const char* op)
      : path(p), file(p, op), header(parse_safetensors(file.bytes(), p.string(), op)) {
    for (std::size_t i = 0; i < header.tensors.size(); ++i) index.emplace(header.tensors[i].name, i);
  }
  std::string where(const TensorInfo& t) const { return path.string() + ": tensor " + detail::in_quotes(t.name); }
};

SafeTensorsFile::SafeTensorsFile(const std::filesystem::path& path, const char* op)
    : impl_(std::make_shared<const Impl>(path, op)) {}

const std::filesystem::path& SafeTensorsFile::path() const { return impl_->path; }
const std::vector<TensorInfo>& SafeTensorsFile::tensors() const { return impl_->header.tensors; }
const std::map<std::string, std::string>& SafeTensorsFile::metadata() const { return impl_->header.metadata; }

const TensorInfo* SafeTensorsFile::find(std::string_view name) const {
  const auto it = impl_->index.find(name);
  return it == impl_->index.end() ? nullptr : &impl_->header.tensors[it->second];
}

std::span<const std::byte> SafeTensorsFile::bytes(const TensorInfo& t) const {
  // Offsets were validated against the file when it was opened.
  return impl_->file.bytes().subspan(impl_->header.data_start + t.begin, t.byte_size());
}

std::optional<DType> SafeTensorsFile::load_dtype(const TensorInfo& t, const TensorLoadOptions& options) {
  if (options.float_dtype && is_file_float(t.dtype)) return options.float_dtype;
  if (options.widen_integers && is_file_integer(t.dtype)) return DType::i64;
  return kiln_dtype(t.dtype);
}

namespace {

// One tensor in the dtype `options` give it; `op` names the public call in errors.
Tensor load_one(const SafeTensorsFile& file, const TensorInfo& t, const TensorLoadOptions& options, const char* op) {
  const std::optional<DType> dtype = SafeTensorsFile::load_dtype(t, options);
  if (!dtype) {
    const std::string hint = is_file_float(t.dtype)     ? "; set float_dtype to convert it"
                             : is_file_integer(t.dtype) ? "; set widen_integers to load it as i64"
                                                        : "";
    throw Error(op, file.path().string() + ": tensor " + detail::in_quotes(t.name) + ": kiln has no dtype for " +
                        file_dtype_name(t.dtype) + hint);
  }
  return file.tensor_as(t, *dtype, options.device, /*convert=*/true, op);
}

}  // namespace

Tensor SafeTensorsFile::tensor(std::string_view name, const TensorLoadOptions& options) const {
  const char* op = "SafeTensorsFile::tensor";
  const TensorInfo* t = find(name);
  KILN_CHECK(t != nullptr, op,
             impl_->path.string() + ": no tensor " + detail::in_quotes(name) + " in the file (it holds " +
                 std::to_string(tensors().size()) + " tensors)");
  return load_one(*this, *t, options, op);
}

Tensor SafeTensorsFile::tensor_as(const TensorInfo& t, DType dtype, Device device, bool convert, const char* op) const {
  const std::string where = impl_->where(t);
  KILN_CHECK(t.shape.size() <= static_cast<std::size_t>(kMaxRank), op,
             where + ": rank " + std::to_string(t.shape.size()) + " is more than the " + std::to_string(kMaxRank) +
                 " dimensions a kiln tensor has");
  const FileDType target = file_dtype(dtype);
  if (t.dtype != target) {
    KILN_CHECK(convert, op,
               where + ": stored as " + file_dtype_name(t.dtype) + ", wanted as " + dtype_name(dtype) +
                   " (a conversion was not asked for)");
    KILN_CHECK(convertible(t.dtype, target), op,
               where + ": cannot convert " + file_dtype_name(t.dtype) + " to " + dtype_name(dtype));
  }
  detail::check_device_holds(device, dtype, op, where);
  // numel was checked against the bytes the file holds: the allocation is bounded by the file
  // (times the widening, when a conversion to a wider dtype was asked for).
  const auto numel = static_cast<std::size_t>(t.numel());
  auto data = std::make_shared<std::vector<std::byte>>(numel * dtype_size(dtype));
  const std::optional<std::size_t> bad = convert_elements(bytes(t), t.dtype, *data, target);
  KILN_CHECK(!bad, op,
             where + ": element " + std::to_string(bad.value_or(0)) + " of " + file_dtype_name(t.dtype) +
                 " does not fit in " + dtype_name(dtype));
  return detail::tensor_from_bytes(std::move(data), Shape(t.shape.begin(), t.shape.end()), dtype, device);
}

std::vector<nn::NamedTensor> load_file(const std::filesystem::path& path, const TensorLoadOptions& options) {
  const SafeTensorsFile file(path, "load_file");
  std::vector<nn::NamedTensor> out;
  out.reserve(file.tensors().size());
  for (const TensorInfo& t : file.tensors()) out.push_back({t.name, load_one(file, t, options, "load_file")});
  return out;
}

}  // namespace kiln::io
