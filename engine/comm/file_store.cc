#include "engine/comm/file_store.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/comm/in_memory_store.h"

namespace accel::comm {
namespace {

constexpr size_t kMaxFileName = 240;
constexpr absl::Duration kFirstPoll = absl::Milliseconds(1);
constexpr absl::Duration kMaxPoll = absl::Milliseconds(50);

absl::Status OsError(std::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat("FileStore: ", std::string(what), " ", path, ": ", std::strerror(errno)));
}

// Closes a descriptor on every path out of a function.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The whole file, or nullopt if it does not exist.
absl::StatusOr<std::optional<std::string>> ReadIfExists(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return OsError("open", path);
  }
  std::string data;
  char chunk[4096];
  while (true) {
    ssize_t n = ::read(fd.get(), chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      return OsError("read", path);
    }
    if (n == 0) break;
    data.append(chunk, static_cast<size_t>(n));
  }
  return std::optional<std::string>(std::move(data));
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Sleeps for the next backoff step, never past the deadline.
void Backoff(absl::Duration* delay, absl::Time deadline) {
  absl::SleepFor(std::min(*delay, std::max(absl::ZeroDuration(), deadline - absl::Now())));
  *delay = std::min(*delay * 2, kMaxPoll);
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileStore>> FileStore::Open(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("FileStore: empty directory path");
  // mkdir -p, component by component.
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return OsError("mkdir", prefix);
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return OsError("stat", dir);
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("FileStore: ", dir, " is not a directory"));
  }
  return std::unique_ptr<FileStore>(new FileStore(dir));
}

std::string FileStore::EncodeKey(const std::string& key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "k_";
  for (unsigned char c : key) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-';
    if (plain) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

absl::StatusOr<std::string> FileStore::KeyPath(const std::string& key) const {
  std::string name = EncodeKey(key);
  if (name.size() > kMaxFileName) {
    return absl::InvalidArgumentError(
        absl::StrCat("FileStore: key of ", key.size(), " bytes encodes to a ", name.size(),
                     "-byte file name (limit ", kMaxFileName, "): ", key.substr(0, 64), "..."));
  }
  return absl::StrCat(dir_, "/", name);
}

absl::Status FileStore::WriteAtomically(const std::string& path, const std::string& value) const {
  // pid + a process-wide counter makes the temporary name unique among live writers, across
  // threads and forked processes alike.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = absl::StrCat(dir_, "/.tmp-", ::getpid(), "-", counter.fetch_add(1));
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) return OsError("create", tmp);
    size_t done = 0;
    while (done < value.size()) {
      ssize_t n = ::write(fd.get(), value.data() + done, value.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        absl::Status error = OsError("write", tmp);
        ::unlink(tmp.c_str());
        return error;
      }
      done += static_cast<size_t>(n);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status error = OsError("rename to " + path + " from", tmp);
    ::unlink(tmp.c_str());
    return error;
  }
  return absl::OkStatus();
}

absl::Status FileStore::Set(const std::string& key, const std::string& value) {
  absl::StatusOr<std::string> path = KeyPath(key);
  if (!path.ok()) return path.status();
  return WriteAtomically(*path, value);
}

absl::StatusOr<std::string> FileStore::Get(const std::string& key, absl::Duration timeout) {
  absl::StatusOr<std::string> path = KeyPath(key);
  if (!path.ok()) return path.status();
  absl::Time deadline = absl::Now() + timeout;
  absl::Duration delay = kFirstPoll;
  while (true) {
    absl::StatusOr<std::optional<std::string>> value = ReadIfExists(*path);
    if (!value.ok()) return value.status();
    if (value->has_value()) return std::move(**value);
    if (absl::Now() >= deadline) return MissingKeysError({key}, timeout);
    Backoff(&delay, deadline);
  }
}

absl::Status FileStore::Wait(const std::vector<std::string>& keys, absl::Duration timeout) {
  std::vector<std::string> paths;
  for (const std::string& key : keys) {
    absl::StatusOr<std::string> path = KeyPath(key);
    if (!path.ok()) return path.status();
    paths.push_back(*std::move(path));
  }
  absl::Time deadline = absl::Now() + timeout;
  absl::Duration delay = kFirstPoll;
  size_t next = 0;  // keys before `next` were seen; keys never disappear
  while (true) {
    while (next < paths.size() && Exists(paths[next])) ++next;
    if (next == paths.size()) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      std::vector<std::string> missing;
      for (size_t i = next; i < paths.size(); ++i) {
        if (!Exists(paths[i])) missing.push_back(keys[i]);
      }
      if (missing.empty()) return absl::OkStatus();
      return MissingKeysError(missing, timeout);
    }
    Backoff(&delay, deadline);
  }
}

absl::StatusOr<int64_t> FileStore::Add(const std::string& key, int64_t delta) {
  absl::StatusOr<std::string> path = KeyPath(key);
  if (!path.ok()) return path.status();
  std::string lock_path = absl::StrCat(dir_, "/l_", EncodeKey(key).substr(2));
  // flock locks belong to the open file description, so two threads of one process that each
  // open the lock file exclude each other just as two processes do.
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.get() < 0) return OsError("create lock", lock_path);
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return OsError("flock", lock_path);
  }
  // The lock is released when `lock` closes, on every return path.
  absl::StatusOr<std::optional<std::string>> value = ReadIfExists(*path);
  if (!value.ok()) return value.status();
  int64_t current = 0;
  if (value->has_value()) {
    absl::StatusOr<int64_t> parsed = ParseCounter(key, **value);
    if (!parsed.ok()) return parsed.status();
    current = *parsed;
  }
  absl::StatusOr<int64_t> sum = AddToCounter(key, current, delta);
  if (!sum.ok()) return sum.status();
  absl::Status written = WriteAtomically(*path, absl::StrCat(*sum));
  if (!written.ok()) return written;
  return *sum;
}

}  // namespace accel::comm
