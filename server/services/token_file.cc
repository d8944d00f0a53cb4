#include "server/services/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/env.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "rpc/credential_files.h"
#include "server/core/job_manager.h"

namespace accel::server {
namespace {

constexpr size_t kShortTokenBytes = 16;

}  // namespace

absl::StatusOr<std::string> EnsureTokenFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    // What is there is read by the shared reader and its rules (rpc/credential_files.h): a
    // FIFO or a device is refused without blocking, a file over 8 KiB unread. Its kind is
    // checked before its mode, so /dev/zero (0666) is named a device, not a chmod away.
    ACCEL_ASSIGN_OR_RETURN(
        std::string contents,
        rpc::ReadCredentialFile(Env::Default(), path, "token file", rpc::kMaxTokenFileBytes));
    if ((st.st_mode & 077) != 0) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "token file %s has mode %04o; others can read it (chmod 600 %s)", path,
          st.st_mode & 07777, path));
    }
    ACCEL_ASSIGN_OR_RETURN(std::string token, rpc::ParseToken(contents, path));
    if (token.size() < kShortTokenBytes) {
      ACCEL_LOG(warn, "token file {} holds a {}-character token: easy to guess; use at least {} "
                "random characters (delete the file to have acceld make one)",
                path, token.size(), kShortTokenBytes);
    }
    return token;
  }
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  const std::string token = RandomToken();
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot create token file ", path, ": ",
                                               strerror(errno)));
  }
  const std::string line = token + "\n";
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                  fsync(fd) == 0;
  close(fd);
  if (!ok) return absl::UnavailableError(absl::StrCat("cannot write token file ", path));
  return token;
}

}  // namespace accel::server
