// POSIX implementation of checkpoint_file.h: a named "<path>.tmp" (not O_TMPFILE, so any
// file system works), write loop, fsync, rename, fsync of the directory.
#include "checkpoint/checkpoint_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sluice {

namespace {

Status IoError(std::string_view op, const std::string& path, int err) {
  return Status::Unavailable(fmt::format("{} {}: {}", op, path, OpenErrorText(err)));
}

// Closes the descriptor on every path out of a function.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now and reports the error close() gives (it can report a failed write-back).
  int Close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Status SyncParentDirectory(const std::string& path) {
  const std::string dir = DirName(path);
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return IoError("open directory", dir, errno);
  if (::fsync(fd.get()) != 0) return IoError("fsync directory", dir, errno);
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  Status st = [&]() -> Status {
    // A stale or planted "<path>.tmp" (a crash, or a symlink put there by someone else) is
    // removed, never opened: unlink() removes a link itself, and O_EXCL | O_NOFOLLOW make
    // the open fail rather than follow anything that appears in between.
    if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) return IoError("remove stale", tmp, errno);
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0) return IoError("create", tmp, errno);
    size_t done = 0;
    while (done < contents.size()) {
      ssize_t n = ::write(fd.get(), contents.data() + done, contents.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return IoError("write", tmp, errno);
      }
      done += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0) return IoError("fsync", tmp, errno);
    if (fd.Close() != 0) return IoError("close", tmp, errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return IoError("rename to " + path, tmp, errno);
    return Status::Ok();
  }();
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return SyncParentDirectory(path);
}

Result<std::optional<std::string>> ReadSmallFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return IoError("open", path, errno);
  }
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("read", path, errno);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > kMaxSmallFileBytes) {
      return Status::Corruption(fmt::format("{}: larger than {} bytes; not a sluice state file",
                                            path, kMaxSmallFileBytes));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return std::optional<std::string>(std::move(out));
}

Status SaveCheckpointFile(const std::string& path, const Checkpoint& cp) {
  return WriteFileAtomic(path, cp.ToJson());
}

Result<std::optional<Checkpoint>> LoadCheckpointFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::optional<std::string> text, ReadSmallFile(path));
  if (!text) return std::optional<Checkpoint>();
  Result<Checkpoint> cp = Checkpoint::FromJson(*text);
  if (!cp.ok()) return cp.status().WithContext(path);
  return std::optional<Checkpoint>(std::move(cp).value());
}

}  // namespace sluice
