// IDX files, the format of MNIST and its family (Fashion-MNIST, KMNIST, EMNIST): a big-endian
// header — two zero bytes, a type code, the number of dimensions, then each dimension as a u32 —
// followed by the values, big-endian, row-major. Gzipped files are read as well (the gzip magic
// decides). Records (slices along the first dimension) are decoded on access.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/ops/shape.h"

namespace kiln::data {

enum class IdxType : std::uint8_t { u8 = 0x08, i8 = 0x09, i16 = 0x0B, i32 = 0x0C, f32 = 0x0D, f64 = 0x0E };

const char* idx_type_name(IdxType type);
std::size_t idx_type_size(IdxType type);

// An open IDX file. Checks everything at opening: the magic, the dimensions (at most kMaxRank,
// their product within reach), and that the data is exactly as long as they say. Copies share the
// bytes; reading records is safe from several threads.
class IdxFile {
 public:
  // Throws kiln::Error("read_idx", "<path>: ...") naming what is wrong.
  explicit IdxFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  IdxType type() const { return type_; }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  // dims()[0]: how many records the file holds.
  std::int64_t records() const { return dims_.empty() ? 0 : dims_[0]; }
  // The dims after the first, e.g. [28, 28] for images; [] for labels.
  Shape record_shape() const { return Shape(dims_.begin() + 1, dims_.end()); }
  std::int64_t record_size() const { return record_size_; }

  // Record `index`'s values converted to float (exact for every type but f64 and large i32).
  std::vector<float> record_floats(std::int64_t index) const;
  // Record `index`'s values as integers; the type must be an integer type.
  std::vector<std::int64_t> record_ints(std::int64_t index) const;
  // The single value of record `index` of a file of scalars (a label file).
  std::int64_t scalar_int(std::int64_t index) const;

 private:
  std::span<const std::byte> record_bytes(std::int64_t index, const char* op) const;

  std::filesystem::path path_;
  IdxType type_ = IdxType::u8;
  std::vector<std::int64_t> dims_;
  std::int64_t record_size_ = 0;
  std::shared_ptr<const void> storage_;  // keeps the mapping or the inflated bytes alive
  std::span<const std::byte> data_;      // the values, after the header
};

}  // namespace kiln::data
