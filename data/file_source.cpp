// Plain files are mapped with kiln::MappedFile (engine/mapped_file.h); gzip files are inflated
// through zlib piece by piece.
#include "kiln/data/file_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "kiln/base/error.h"

namespace kiln::data::detail {

namespace {

std::string system_error(const std::filesystem::path& path, const char* what) {
  return path.string() + ": " + what + ": " + std::strerror(errno);
}

// An open descriptor of a regular file, closed on every path out.
struct Descriptor {
  int fd = -1;
  Descriptor(const std::filesystem::path& path, const char* op) {
    do {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    KILN_CHECK(fd >= 0, op, system_error(path, "cannot open the file"));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const std::string message = system_error(path, "cannot read the file's size");
      ::close(fd);
      throw Error(op, message);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      throw Error(op, path.string() + ": not a regular file");
    }
    size = static_cast<std::size_t>(st.st_size);
  }
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  std::size_t size = 0;
};

}  // namespace

bool is_gzip_file(const std::filesystem::path& path, const char* op) {
  Descriptor file(path, op);
  unsigned char magic[2] = {0, 0};
  ssize_t got;
  do {
    got = ::pread(file.fd, magic, 2, 0);
  } while (got < 0 && errno == EINTR);
  KILN_CHECK(got >= 0, op, system_error(path, "cannot read the file"));
  return got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

struct GzipReader::Handle {
  gzFile file = nullptr;
  ~Handle() {
    if (file) gzclose_r(file);
  }
};

GzipReader::GzipReader(const std::filesystem::path& path, const char* op)
    : handle_(std::make_unique<Handle>()), path_(path.string()), op_(op) {
  Descriptor check(path, op);  // a clear error for a missing file or a directory
  handle_->file = gzopen(path.c_str(), "rb");
  KILN_CHECK(handle_->file != nullptr, op, system_error(path, "cannot open the gzip file"));
  gzbuffer(handle_->file, 1 << 17);
}

GzipReader::~GzipReader() = default;

std::size_t GzipReader::read_into(std::vector<std::byte>& out, std::size_t n) {
  std::size_t total = 0;
  while (total < n) {
    // Grows the buffer only by what this piece may add: the stream, not a header, decides.
    const std::size_t piece = std::min<std::size_t>(n - total, 1 << 20);
    const std::size_t old_size = out.size();
    out.resize(old_size + piece);
    const int got = gzread(handle_->file, out.data() + old_size, static_cast<unsigned>(piece));
    if (got < 0) {
      out.resize(old_size);
      throw Error(op_, path_ + ": corrupt gzip data (" + zlib_message() + ")");
    }
    out.resize(old_size + static_cast<std::size_t>(got));
    total += static_cast<std::size_t>(got);
    if (static_cast<std::size_t>(got) < piece) {
      // gzread returns short at the end of the stream, or before reporting a cut-off stream.
      int code = Z_OK;
      gzerror(handle_->file, &code);
      KILN_CHECK(code == Z_OK, op_, path_ + ": corrupt gzip data (" + zlib_message() + ")");
      break;
    }
  }
  return total;
}

std::string GzipReader::zlib_message() const {
  int code = Z_OK;
  const char* message = gzerror(handle_->file, &code);
  std::string text = message && *message ? message : "zlib error " + std::to_string(code);
  // zlib puts the path in front; the caller's message names the file already.
  if (text.starts_with(path_ + ": ")) text.erase(0, path_.size() + 2);
  return text;
}

bool GzipReader::at_end() {
  std::vector<std::byte> probe;
  return read_into(probe, 1) == 0;
}

std::vector<std::byte> read_whole_file(const std::filesystem::path& path, const char* op) {
  std::vector<std::byte> out;
  if (is_gzip_file(path, op)) {
    GzipReader reader(path, op);
    while (reader.read_into(out, 1 << 20) == (1 << 20)) {
    }
    return out;
  }
  MappedFile mapped(path, op);
  out.assign(mapped.bytes().begin(), mapped.bytes().end());
  return out;
}

}  // namespace kiln::data::detail
