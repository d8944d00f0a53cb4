#include "engine/testing/fault_env.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::testing {
namespace {

class FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultEnv* env, std::unique_ptr<WritableFile> base, std::string path)
      : env_(env), base_(std::move(base)), path_(std::move(path)) {}

  absl::Status Append(std::string_view data) override {
    ACCEL_RETURN_IF_ERROR(env_->Before(FaultOp::kAppend, path_));
    return base_->Append(data);
  }
  absl::Status Sync() override {
    ACCEL_RETURN_IF_ERROR(env_->Before(FaultOp::kSync, path_));
    return base_->Sync();
  }
  absl::Status Close() override {
    ACCEL_RETURN_IF_ERROR(env_->Before(FaultOp::kClose, path_));
    return base_->Close();
  }

 private:
  FaultEnv* env_;
  std::unique_ptr<WritableFile> base_;
  std::string path_;
};

}  // namespace

std::string_view FaultOpName(FaultOp op) {
  switch (op) {
    case FaultOp::kCreate:
      return "create";
    case FaultOp::kAppend:
      return "append";
    case FaultOp::kSync:
      return "sync";
    case FaultOp::kClose:
      return "close";
    case FaultOp::kRename:
      return "rename";
    case FaultOp::kSyncDir:
      return "sync_dir";
    case FaultOp::kDelete:
      return "delete";
    case FaultOp::kCreateDirs:
      return "create_dirs";
  }
  return "unknown";
}

FaultEnv::FaultEnv(Env* base) : base_(base) {}

void FaultEnv::FailNth(FaultOp op, int64_t n) {
  absl::MutexLock lock(&mu_);
  rules_[static_cast<int>(op)].fail_nth = n;
}

void FaultEnv::FailFrom(FaultOp op, int64_t n) {
  absl::MutexLock lock(&mu_);
  rules_[static_cast<int>(op)].fail_from = n;
}

void FaultEnv::CrashAfter(FaultOp op, int64_t n) {
  absl::MutexLock lock(&mu_);
  rules_[static_cast<int>(op)].crash_after = n;
}

void FaultEnv::CrashAfterMutations(int64_t n) {
  absl::MutexLock lock(&mu_);
  crash_after_mutations_ = n;
}

void FaultEnv::ClearFaults() {
  absl::MutexLock lock(&mu_);
  rules_ = {};
  crash_after_mutations_ = -1;
  crashed_ = false;
}

void FaultEnv::ResetCounts() {
  absl::MutexLock lock(&mu_);
  counts_ = {};
  total_ = 0;
  injected_ = 0;
}

int64_t FaultEnv::Count(FaultOp op) const {
  absl::MutexLock lock(&mu_);
  return counts_[static_cast<int>(op)];
}

int64_t FaultEnv::TotalCount() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

int64_t FaultEnv::InjectedFailures() const {
  absl::MutexLock lock(&mu_);
  return injected_;
}

bool FaultEnv::crashed() const {
  absl::MutexLock lock(&mu_);
  return crashed_;
}

absl::Status FaultEnv::Before(FaultOp op, std::string_view path) {
  absl::MutexLock lock(&mu_);
  const int64_t index = counts_[static_cast<int>(op)]++;
  const int64_t before = total_++;
  if (crash_after_mutations_ >= 0 && before >= crash_after_mutations_) crashed_ = true;
  const Rule& rule = rules_[static_cast<int>(op)];
  const bool fail =
      crashed_ || index == rule.fail_nth || (rule.fail_from >= 0 && index >= rule.fail_from);
  if (fail) {
    ++injected_;
    return absl::InternalError(absl::StrCat("injected fault: ", std::string(FaultOpName(op)), " ",
                                            std::string(path), crashed_ ? " (crashed)" : ""));
  }
  // The crash comes after this occurrence has reached the base Env.
  if (index == rule.crash_after) crashed_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultEnv::NewWritableFile(const std::string& path) {
  ACCEL_RETURN_IF_ERROR(Before(FaultOp::kCreate, path));
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, base_->NewWritableFile(path));
  return std::unique_ptr<WritableFile>(
      std::make_unique<FaultWritableFile>(this, std::move(file), path));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultEnv::NewRandomAccessFile(
    const std::string& path) {
  return base_->NewRandomAccessFile(path);
}

bool FaultEnv::FileExists(const std::string& path) { return base_->FileExists(path); }

absl::StatusOr<uint64_t> FaultEnv::GetFileSize(const std::string& path) {
  return base_->GetFileSize(path);
}

absl::Status FaultEnv::CreateDirs(const std::string& path) {
  ACCEL_RETURN_IF_ERROR(Before(FaultOp::kCreateDirs, path));
  return base_->CreateDirs(path);
}

absl::StatusOr<std::vector<std::string>> FaultEnv::ListDir(const std::string& path) {
  return base_->ListDir(path);
}

absl::Status FaultEnv::DeleteFile(const std::string& path) {
  ACCEL_RETURN_IF_ERROR(Before(FaultOp::kDelete, path));
  return base_->DeleteFile(path);
}

absl::Status FaultEnv::DeleteRecursively(const std::string& path) {
  ACCEL_RETURN_IF_ERROR(Before(FaultOp::kDelete, path));
  return base_->DeleteRecursively(path);
}

absl::Status FaultEnv::RenameFile(const std::string& from, const std::string& to) {
  ACCEL_RETURN_IF_ERROR(Before(FaultOp::kRename, absl::StrCat(from, " -> ", to)));
  return base_->RenameFile(from, to);
}

absl::Status FaultEnv::SyncDir(const std::string& path) {
  ACCEL_RETURN_IF_ERROR(Before(FaultOp::kSyncDir, path));
  return base_->SyncDir(path);
}

int64_t FaultEnv::NowMicros() { return base_->NowMicros(); }
void FaultEnv::SleepForMicros(int64_t micros) { base_->SleepForMicros(micros); }

}  // namespace accel::testing
