// Env helpers shared by every implementation.
#include "engine/base/env.h"

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel {

absl::StatusOr<std::string> ReadFileToString(Env* env, const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  std::string data(file->Size(), '\0');
  ACCEL_RETURN_IF_ERROR(file->Read(0, data.size(), data.data()));
  return data;
}

absl::Status WriteFileAtomic(Env* env, const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp";
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(tmp));
  ACCEL_RETURN_IF_ERROR(file->Append(data));
  ACCEL_RETURN_IF_ERROR(file->Sync());
  ACCEL_RETURN_IF_ERROR(file->Close());
  ACCEL_RETURN_IF_ERROR(env->RenameFile(tmp, path));
  return env->SyncDir(DirName(path));
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  if (a.back() == '/') return absl::StrCat(std::string(a), std::string(b));
  return absl::StrCat(std::string(a), "/", std::string(b));
}

std::string DirName(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace accel
