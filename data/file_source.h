// Reading dataset files, gzipped or not, as untrusted input. A plain file is memory-mapped (the
// kernel pages in what is read); a gzipped one is inflated piece by piece, so a header that
// lies about the size never makes a reader allocate more than the stream really holds.
#pragma once
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/engine/mapped_file.h"

namespace kiln::data::detail {

// True when the file starts with the gzip magic (1f 8b). Throws naming `op` when it cannot be
// opened or is not a regular file.
bool is_gzip_file(const std::filesystem::path& path, const char* op);

// The inflated bytes of a gzip file, read in order.
class GzipReader {
 public:
  GzipReader(const std::filesystem::path& path, const char* op);
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;
  // Appends up to `n` more bytes to `out`; returns how many came (fewer only at the end of the
  // stream). Throws naming the file when the compressed data is corrupt or cut short.
  std::size_t read_into(std::vector<std::byte>& out, std::size_t n);
  // True when no byte follows (checks the stream's CRC on the way).
  bool at_end();

 private:
  // zlib's description of the stream's error.
  std::string zlib_message() const;

  struct Handle;
  std::unique_ptr<Handle> handle_;
  std::string path_;
  const char* op_;
};

// A whole file's bytes (inflated when gzipped), for readers that parse everything at once.
std::vector<std::byte> read_whole_file(const std::filesystem::path& path, const char* op);

}  // namespace kiln::data::detail
