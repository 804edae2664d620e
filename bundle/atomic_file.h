// Files that several processes update at once: the autotune cache (bundle/cache.h) and a
// bundle that `kiln tune` adds variants to (compiler/compile.h).
//
// The protocol: take FileLock on a lock file beside the data, re-read the data, change it,
// replace it with write_atomically, drop the lock. A reader needs no lock: it sees the old
// file or the new one, never a mix. The lock is advisory (flock): writers that skip it are
// not protected.
#pragma once

#include <string>
#include <string_view>

#include "bundle/status.h"

namespace kiln::files {

/// An exclusive flock on a lock file, held until the FileLock is destroyed (or moved from).
class FileLock {
 public:
  /// Opens `path` (created with mode 0644 when missing; never deleted, since deleting a lock
  /// file races with processes waiting on it) and waits for the exclusive lock. Errors:
  /// "PATH: cannot create lock file: REASON", "PATH: cannot lock: REASON".
  static Result<FileLock> acquire(const std::string& path);
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

/// Replaces `path` with `bytes`: writes "PATH.tmp.PID.N" (N counts this process's calls, so
/// threads and processes never share a temporary) with the old file's permissions (0644 when
/// new), fsyncs and closes it, renames it over `path` and fsyncs the directory. On failure
/// the temporary is removed and `path` is untouched: "TMP: cannot write (PATH unchanged):
/// REASON", "TMP: cannot create (PATH not written): REASON".
Status write_atomically(const std::string& path, std::string_view bytes);

/// "PATH: WHAT: strerror(errno)".
Status errno_error(const std::string& path, std::string_view what);

}  // namespace kiln::files
