#include "server/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/logging.h"
#include "server/job_manager.h"

namespace accel::server {
namespace {

constexpr size_t kMaxTokenBytes = 4096;
constexpr size_t kShortTokenBytes = 16;

}  // namespace

absl::StatusOr<std::string> EnsureTokenFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if ((st.st_mode & 077) != 0) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "token file %s has mode %04o; others can read it (chmod 600 %s)", path,
          st.st_mode & 07777, path));
    }
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string token(absl::StripAsciiWhitespace(ss.str()));
    if (token.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("token file ", path, " is empty"));
    }
    // A bearer token travels in a gRPC metadata header: at most a few KiB, printable ASCII.
    if (token.size() > kMaxTokenBytes) {
      return absl::FailedPreconditionError(absl::StrCat(
          "token file ", path, " holds ", token.size(), " bytes; a token is at most ",
          kMaxTokenBytes, " (it travels in a gRPC header); delete the file to have acceld make "
          "one"));
    }
    for (const char ch : token) {
      if (ch < 0x21 || ch > 0x7e) {
        return absl::FailedPreconditionError(absl::StrCat(
            "token file ", path, " holds a character that cannot travel in a header (printable "
            "ASCII without spaces only)"));
      }
    }
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
