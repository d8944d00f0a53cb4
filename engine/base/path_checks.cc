#include "engine/base/path_checks.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace accel {
namespace {

const char* KindOf(const struct stat& st) { return DescribeFileKind(st.st_mode); }

// The kernel's file systems are no place for a job's files: /proc/self/environ reads as a
// regular file holding acceld's environment, /proc and /sys take writes as commands (devices
// under /dev are refused by their kind; /dev/shm is an ordinary tmpfs). `existing`
// is a path that exists. The mount point's name, or nullptr.
const char* KernelFileSystem(const std::string& existing) {
  std::error_code ec;
  const std::string real = std::filesystem::canonical(existing, ec).string();
  for (const char* root : {"/proc", "/sys"}) {
    const std::string r(root);
    if (!ec && (real == r || real.rfind(r + "/", 0) == 0)) return root;
  }
  struct statfs fs;
  if (::statfs(existing.c_str(), &fs) == 0) {
    if (fs.f_type == PROC_SUPER_MAGIC) return "/proc";
    if (fs.f_type == SYSFS_MAGIC) return "/sys";
  }
  return nullptr;
}

}  // namespace

const char* DescribeFileKind(mode_t mode) {
  if (S_ISREG(mode)) return "a file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

absl::Status CheckReadableFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::InvalidArgumentError(absl::StrCat("no such file: ", path));
    return absl::InvalidArgumentError(
        absl::StrCat(path, " cannot be read: ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is ", KindOf(st), ", not a regular file"));
  }
  if (const char* kernel = KernelFileSystem(path)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is under ", kernel, ", a kernel file system, not a job's file"));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not readable"));
  }
  return absl::OkStatus();
}

absl::Status CheckWritableDirectory(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  while (!p.empty() && !fs::exists(p, ec) && p != p.parent_path()) p = p.parent_path();
  struct stat st;
  if (::stat(p.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a directory (", p.string(), " is ", KindOf(st), ")"));
  }
  if (const char* kernel = KernelFileSystem(p.string())) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is under ", kernel, ", a kernel file system, not a directory for a job's files"));
  }
  if (::access(p.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not writable (", p.string(), ": permission denied)"));
  }
  return absl::OkStatus();
}

}  // namespace accel
