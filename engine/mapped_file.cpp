// An empty file has no mapping (mmap refuses length 0): it is an empty span, and the header
// parser reports it as too short. The mapping is private and read-only; if another process
// truncates the file while it is mapped, reading the lost pages raises SIGBUS — the same
// contract as every mmap-based reader, safetensors' included.
#include "kiln/engine/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "kiln/base/error.h"

namespace kiln {

namespace {

// Closes the descriptor on every path out of the constructor: the mapping outlives it.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

std::string system_error(const std::filesystem::path& path, const char* what) {
  return path.string() + ": " + what + ": " + std::strerror(errno);
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path, const char* op) {
  Descriptor file;
  do {
    file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (file.fd < 0 && errno == EINTR);
  KILN_CHECK(file.fd >= 0, op, system_error(path, "cannot open the file"));
  struct stat st {};
  KILN_CHECK(::fstat(file.fd, &st) == 0, op, system_error(path, "cannot read the file's size"));
  KILN_CHECK(S_ISREG(st.st_mode), op, path.string() + ": not a regular file");
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
  KILN_CHECK(p != MAP_FAILED, op, system_error(path, "cannot map the file into memory"));
  data_ = static_cast<const std::byte*>(p);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace kiln
