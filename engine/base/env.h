// Env: the file system and the clock, as an interface production code takes as a parameter, so
// tests can substitute an in-memory file system (testing/mem_env.h), a fault-injecting one
// (testing/fault_env.h) or a fake clock (testing/fake_clock.h). LevelDB's shape.
//
// Errors: NotFound for a missing path, InvalidArgument for a path of the wrong kind, Internal
// for an OS failure (with errno text), DataLoss for a short read. Every message names the path.
// Thread safety: Env implementations are thread-safe; file objects are not (one user at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel {

// A file written front to back. Data reaches stable storage only after Sync().
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  [[nodiscard]] virtual absl::Status Append(std::string_view data) = 0;
  [[nodiscard]] virtual absl::Status Sync() = 0;
  [[nodiscard]] virtual absl::Status Close() = 0;
};

// A file read at arbitrary offsets. Safe for concurrent Read calls.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads exactly n bytes at offset into dst; DataLoss (naming file and offset) if the file
  // ends before offset + n.
  [[nodiscard]] virtual absl::Status Read(uint64_t offset, size_t n, char* dst) const = 0;
  virtual uint64_t Size() const = 0;
  virtual const std::string& Path() const = 0;
};

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMicros() = 0;
  virtual void SleepForMicros(int64_t micros) = 0;
};

class Env : public Clock {
 public:
  // Truncates or creates.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) = 0;
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) = 0;
  virtual bool FileExists(const std::string& path) = 0;
  // A directory is InvalidArgument ("<path> is a directory, not a file"), never a size: callers
  // compare sizes to detect truncation, and a directory's st_size would read as one.
  [[nodiscard]] virtual absl::StatusOr<uint64_t> GetFileSize(const std::string& path) = 0;
  // Creates path and any missing parents; OK if it exists.
  [[nodiscard]] virtual absl::Status CreateDirs(const std::string& path) = 0;
  // Names (not paths) of the entries of a directory, sorted.
  [[nodiscard]] virtual absl::StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) = 0;
  [[nodiscard]] virtual absl::Status DeleteFile(const std::string& path) = 0;
  // Deletes a directory and everything below it.
  [[nodiscard]] virtual absl::Status DeleteRecursively(const std::string& path) = 0;
  // Atomically replaces `to` with `from` (POSIX rename semantics).
  [[nodiscard]] virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Makes directory entries (creations, renames) durable: fsync on the directory.
  [[nodiscard]] virtual absl::Status SyncDir(const std::string& path) = 0;

  // The process-wide POSIX environment. Never destroyed.
  static Env* Default();
};

// Helpers built on the interface.
[[nodiscard]] absl::StatusOr<std::string> ReadFileToString(Env* env, const std::string& path);
// Writes data to `path` crash-safely: path.tmp, fsync, rename, fsync of the directory.
[[nodiscard]] absl::Status WriteFileAtomic(Env* env, const std::string& path,
                                           std::string_view data);
std::string JoinPath(std::string_view a, std::string_view b);
std::string DirName(std::string_view path);

}  // namespace accel
