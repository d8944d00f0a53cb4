// MemEnv: an in-memory Env for tests, with a model of what survives a power loss.
//
// Durability follows POSIX and LevelDB's fault-injection tests:
//   * A file's bytes become durable only when WritableFile::Sync() returns. Bytes appended after
//     the last Sync are lost by SimulatePowerLoss().
//   * A directory entry (a file or directory created, renamed in or out, deleted) becomes
//     durable only when SyncDir() of the directory that holds it returns. Until then a power
//     loss undoes it: a new file or directory vanishes, a deleted one comes back, a rename is
//     reverted. New directories made by CreateDirs() are entries of their parents like any
//     other, so they too need SyncDir(parent).
//   * Directories are objects of their own (like inodes): renaming a directory moves its
//     durable contents with it.
//   * NewWritableFile() on an existing file truncates it in place, and the truncation is
//     durable at once (the "zero-length file after a crash" behaviour of ext4): only data
//     Sync()ed after it survives.
// SimulatePowerLoss() rolls the whole tree back to its durable state and invalidates every open
// WritableFile (their calls then fail with FailedPrecondition: the process that held them is
// gone). SyncAll() makes everything durable, like sync(2), for setting up a test's start state.
//
// Paths: "/a/b" and "a/b" name the same file (the working directory is the root); "." and
// empty components are ignored, ".." is not supported (InvalidArgument). Error codes match
// PosixEnv: NotFound for a missing path or parent, InvalidArgument for a path of the wrong kind
// (a directory where a file is expected or the reverse, a file used as a parent). Renaming a
// directory onto a non-empty directory is Internal, as POSIX's ENOTEMPTY is in PosixEnv.
//
// The clock is a FakeClock (see fake_clock.h), owned unless one is passed in.
// Thread-safe: one mutex guards the whole tree. RandomAccessFile::Read is safe concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "engine/testing/fake_clock.h"

namespace accel::testing {

class MemEnv final : public Env {
 public:
  // clock == nullptr: the env owns a FakeClock starting at 0. Otherwise the clock is not owned
  // and must outlive the env.
  explicit MemEnv(FakeClock* clock = nullptr);
  ~MemEnv() override;
  MemEnv(const MemEnv&) = delete;
  MemEnv& operator=(const MemEnv&) = delete;

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;
  bool FileExists(const std::string& path) override;
  // A directory's size is 0.
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  absl::Status CreateDirs(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  absl::Status DeleteFile(const std::string& path) override;
  // OK when the path does not exist (like std::filesystem::remove_all); deletes a file too.
  absl::Status DeleteRecursively(const std::string& path) override;
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status SyncDir(const std::string& path) override;

  int64_t NowMicros() override;
  void SleepForMicros(int64_t micros) override;
  FakeClock* clock() { return clock_; }

  // Rolls the tree back to its durable state (see the file comment).
  void SimulatePowerLoss();
  // Makes the whole current tree durable: every file's data and every directory's entries.
  void SyncAll();
  // Every file under the root as "path (size bytes, synced bytes)", one a line, sorted;
  // directories end in "/". For test failure messages.
  std::string DebugString();

  struct Fs;  // the tree and its mutex, shared with open files

 private:
  std::shared_ptr<Fs> fs_;
  std::unique_ptr<FakeClock> owned_clock_;
  FakeClock* clock_;
};

}  // namespace accel::testing
