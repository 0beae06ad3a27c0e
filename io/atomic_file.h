// Writing a file so that a crash, a full disk or an error halfway never leaves a half-written
// file where a good one was: the bytes go to a temporary file in the same directory, which is
// flushed to disk (fsync) and renamed over the target only once complete; the directory is then
// flushed so the rename itself survives a power cut. Until commit() the target is untouched, and
// the destructor removes an uncommitted temporary file.
#pragma once
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

namespace kiln::io::detail {

class AtomicFile {
 public:
  // Creates the temporary file; throws kiln::Error(op, "<target>: ...") when the directory does
  // not exist or cannot be written.
  AtomicFile(const std::filesystem::path& target, const char* op);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> bytes);
  // Flushes, closes and renames the temporary file over the target.
  void commit();

  const std::filesystem::path& temporary_path() const { return temp_; }

 private:
  [[noreturn]] void fail(const std::string& what);
  std::filesystem::path target_;
  std::filesystem::path temp_;
  const char* op_;
  int fd_ = -1;
};

}  // namespace kiln::io::detail
