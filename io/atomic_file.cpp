// POSIX calls, each checked: write() may write less than asked or be interrupted, and close()
// can report a deferred write error (NFS), so both are looped or checked before the rename.
#include "kiln/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "kiln/base/error.h"
#include "kiln/base/log.h"

namespace kiln::io::detail {

namespace {

std::atomic<unsigned> g_temp_counter{0};

// The temporary file starts with a dot so directory listings and globs ("*.safetensors") skip it.
std::filesystem::path temporary_name(const std::filesystem::path& target, unsigned attempt) {
  std::string name = ".";
  name += target.filename().string();
  name += ".tmp-";
  name += std::to_string(::getpid());
  name += '-';
  name += std::to_string(g_temp_counter.fetch_add(1) + attempt);
  return target.parent_path() / name;
}

std::filesystem::path directory_of(const std::filesystem::path& target) {
  return target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
}

}  // namespace

AtomicFile::AtomicFile(const std::filesystem::path& target, const char* op) : target_(target), op_(op) {
  KILN_CHECK(!target.empty() && target.has_filename(), op, "'" + target.string() + "' does not name a file");
  for (unsigned attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temp_ = temporary_name(target, attempt);
    // 0666 minus the process's umask: the same permissions as any new file the user writes.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST && errno != EINTR) break;
  }
  KILN_CHECK(
      fd_ >= 0, op,
      target.string() + ": cannot create a file in " + directory_of(target).string() + ": " + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& what) {
  const int saved = errno;
  ::close(fd_);
  ::unlink(temp_.c_str());
  fd_ = -1;
  throw Error(
      op_, target_.string() + ": " + what + ": " + std::strerror(saved) + " (the existing file, if any, is unchanged)");
}

void AtomicFile::write(std::span<const std::byte> bytes) {
  KILN_CHECK(fd_ >= 0, op_, target_.string() + ": write after the file was closed (internal error)");
  const std::byte* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      fail("cannot write");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  KILN_CHECK(fd_ >= 0, op_, target_.string() + ": commit after the file was closed (internal error)");
  if (::fsync(fd_) != 0) fail("cannot flush the data to disk");
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temp_.c_str());
    errno = saved;
    throw Error(op_, target_.string() + ": cannot close the written file: " + std::strerror(saved) +
                         " (the existing file, if any, is unchanged)");
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp_.c_str());
    throw Error(op_, target_.string() + ": cannot replace the file: " + std::strerror(saved) +
                         " (the existing file, if any, is unchanged)");
  }
  // The rename is done; flushing the directory makes it durable. Some file systems cannot
  // fsync a directory: that is no reason to report a failed save.
  const int dir = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    if (::fsync(dir) != 0 && log_enabled(spdlog::level::debug))
      logger().debug("{}: fsync of the directory failed: {}", target_.string(), std::strerror(errno));
    ::close(dir);
  }
}

}  // namespace kiln::io::detail
