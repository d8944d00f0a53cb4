// FaultEnv: an Env that forwards to another Env (usually a MemEnv) and injects failures, so a
// test can check that code survives an error or a crash at every point where one can happen.
//
// Every mutating call is an occurrence of one FaultOp and is counted, failed or not. The usual
// pattern (what the checkpoint tests do):
//
//   FaultEnv probe(&mem);  RunWorkload(&probe);           // count the fault points
//   for (FaultOp op : kAllFaultOps)
//     for (int64_t i = 0; i < probe.Count(op); ++i) {
//       MemEnv fresh;  <set up the start state>;  FaultEnv env(&fresh);
//       env.CrashAfter(op, i);  (void)RunWorkload(&env);  fresh.SimulatePowerLoss();
//       <check that the state recovered from `fresh` is the old or the new one>
//     }
//
// Occurrences are numbered from 0 per op, counting since construction or ResetCounts():
// FailNth(FaultOp::kSync, 0) on a fresh FaultEnv fails the first Sync().
// An injected failure does nothing to the wrapped Env and returns
// absl::InternalError("injected fault: <op> <path>").
//
// Reads (NewRandomAccessFile, FileExists, GetFileSize, ListDir) and the clock are never failed,
// not even after a crash: a test inspects the state through them.
// Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "engine/base/env.h"

namespace accel::testing {

enum class FaultOp : int {
  kCreate = 0,      // NewWritableFile
  kAppend = 1,      // WritableFile::Append
  kSync = 2,        // WritableFile::Sync
  kClose = 3,       // WritableFile::Close
  kRename = 4,      // RenameFile
  kSyncDir = 5,     // SyncDir
  kDelete = 6,      // DeleteFile and DeleteRecursively
  kCreateDirs = 7,  // CreateDirs
};
inline constexpr int kNumFaultOps = 8;
inline constexpr std::array<FaultOp, kNumFaultOps> kAllFaultOps = {
    FaultOp::kCreate, FaultOp::kAppend,  FaultOp::kSync,   FaultOp::kClose,
    FaultOp::kRename, FaultOp::kSyncDir, FaultOp::kDelete, FaultOp::kCreateDirs};

// "create", "append", "sync", "close", "rename", "sync_dir", "delete", "create_dirs".
std::string_view FaultOpName(FaultOp op);

class FaultEnv final : public Env {
 public:
  // base is not owned and must outlive this env and every file opened through it.
  explicit FaultEnv(Env* base);

  // Fails occurrence n of op only; the ones before and after go through.
  void FailNth(FaultOp op, int64_t n);
  // Fails occurrences n, n+1, ... of op.
  void FailFrom(FaultOp op, int64_t n);
  // Occurrence n of op goes through to the base Env, then the process "dies": every later
  // mutating call, of any op, fails. Combine with MemEnv::SimulatePowerLoss().
  void CrashAfter(FaultOp op, int64_t n);
  // Once n mutating calls (all ops together, as TotalCount() counts them) have gone through,
  // the process dies; on a fresh FaultEnv n == 0 dies before the first. Enumerates every crash
  // point of a workload in order, n = 0..TotalCount() of a probe run.
  void CrashAfterMutations(int64_t n);
  // Forgets every fault and the crash; counts are kept.
  void ClearFaults();
  void ResetCounts();

  // Occurrences so far, failed ones included.
  int64_t Count(FaultOp op) const;
  // All mutating calls so far.
  int64_t TotalCount() const;
  // Injected failures so far (crash failures included).
  int64_t InjectedFailures() const;
  bool crashed() const;

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;
  bool FileExists(const std::string& path) override;
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  absl::Status CreateDirs(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  absl::Status DeleteFile(const std::string& path) override;
  absl::Status DeleteRecursively(const std::string& path) override;
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status SyncDir(const std::string& path) override;
  int64_t NowMicros() override;
  void SleepForMicros(int64_t micros) override;

  // Called before each mutating operation: counts it and returns the injected error, or OK to
  // go ahead. Public for the file wrapper; tests need not call it.
  [[nodiscard]] absl::Status Before(FaultOp op, std::string_view path);

 private:
  struct Rule {
    int64_t fail_nth = -1;
    int64_t fail_from = -1;
    int64_t crash_after = -1;
  };

  Env* const base_;
  mutable absl::Mutex mu_;
  std::array<int64_t, kNumFaultOps> counts_ ABSL_GUARDED_BY(mu_) = {};
  std::array<Rule, kNumFaultOps> rules_ ABSL_GUARDED_BY(mu_) = {};
  int64_t total_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t crash_after_mutations_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t injected_ ABSL_GUARDED_BY(mu_) = 0;
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace accel::testing
