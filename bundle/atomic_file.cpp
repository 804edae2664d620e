// Locks and atomic replacement (see atomic_file.h).
#include "bundle/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kiln::files {

Status errno_error(const std::string& path, std::string_view what) {
  return Status::error(fmt::format("{}: {}: {}", path, what, std::strerror(errno)));
}

Result<FileLock> FileLock::acquire(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(path, "cannot create lock file");
  FileLock lock(fd);  // closing the descriptor releases the lock
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return errno_error(path, "cannot lock");
  }
  return lock;
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

Status write_atomically(const std::string& path, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter++);
  mode_t mode = 0644;
  struct stat st {};
  bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed) mode = st.st_mode & 07777;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return errno_error(tmp, fmt::format("cannot create ({} not written)", path));
  auto abandon = [&](std::string_view what) {
    Status s = errno_error(tmp, fmt::format("{} ({} unchanged)", what, path));
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  if (existed && ::fchmod(fd, mode) != 0) return abandon("cannot set mode");
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return abandon("cannot write");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return abandon("cannot sync");
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return abandon("cannot write");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return abandon("cannot rename");
  // Make the rename itself durable; a failure here cannot be undone and is not reported.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::ok_status();
}

}  // namespace kiln::files
