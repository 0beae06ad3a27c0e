// A read-only memory mapping of a whole file (POSIX mmap), unmapped on destruction. Weight files
// (io/) and dataset files (data/) are read through it so that a large file is never copied whole
// into memory: the kernel pages in the bytes that are actually read.
#pragma once
#include <cstddef>
#include <filesystem>
#include <span>

namespace kiln {

class MappedFile {
 public:
  // Throws kiln::Error(op, "<path>: ...") when the file cannot be opened, is not a regular
  // file, or cannot be mapped.
  MappedFile(const std::filesystem::path& path, const char* op);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  void release() noexcept;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace kiln
