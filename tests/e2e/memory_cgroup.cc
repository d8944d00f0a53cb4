#include "tests/e2e/memory_cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace accel::testing {
namespace {

constexpr char kRoot[] = "/sys/fs/cgroup/memory";

int64_t ReadNumber(const std::string& path, const std::string& key = "") {
  std::ifstream f(path);
  std::string word;
  int64_t value = -1;
  if (key.empty()) {
    f >> value;
    return value;
  }
  while (f >> word >> value) {
    if (word == key) return value;
  }
  return -1;
}

// This process's path in the v1 memory hierarchy ("/a/b"), or "" at the root: new cgroups go
// below it, where a container lets its root user create them.
std::string OwnMemoryCgroup() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    if (controllers.find(",memory,") != std::string::npos) {
      const std::string path = line.substr(b + 1);
      return path == "/" ? "" : path;
    }
  }
  return "";
}

}  // namespace

std::string MemoryCgroup::WhyUnavailable() {
#ifdef __SANITIZE_ADDRESS__
  // The tests' limits are sized on the plain build's resident set; ASan's allocator, quarantine
  // and shadow pages are resident too (an ASan worker's plan saw 140.6 MiB RssAnon at start
  // and found no room for activation checkpointing in 300 MiB), so the plan and the OOM kill
  // would measure ASan, not accel.
  return "limits sized for the plain build's resident memory; not under AddressSanitizer";
#endif
  if (::geteuid() != 0) return "needs root to create a memory cgroup";
  if (::access((std::string(kRoot) + "/memory.limit_in_bytes").c_str(), F_OK) != 0) {
    return "no cgroup v1 memory controller at /sys/fs/cgroup/memory";
  }
  return "";
}

absl::StatusOr<MemoryCgroup> MemoryCgroup::Create(const std::string& name, int64_t limit_bytes) {
  const std::string path = absl::StrCat(kRoot, OwnMemoryCgroup(), "/", name);
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("mkdir ", path, ": ", std::strerror(errno)));
  }
  MemoryCgroup cgroup(path);
  std::ofstream limit(path + "/memory.limit_in_bytes");
  limit << limit_bytes;
  limit.close();
  if (!limit || ReadNumber(path + "/memory.limit_in_bytes") > limit_bytes) {
    return absl::InternalError(absl::StrCat("cannot set ", path, "/memory.limit_in_bytes"));
  }
  return cgroup;
}

MemoryCgroup::~MemoryCgroup() {
  if (!path_.empty()) ::rmdir(path_.c_str());
}

std::vector<std::string> MemoryCgroup::Wrap(const std::vector<std::string>& argv) const {
  std::vector<std::string> wrapped = {
      "/bin/sh", "-c", absl::StrCat("echo $$ > ", path_, "/cgroup.procs && exec \"$@\""), "sh"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

int64_t MemoryCgroup::MaxUsageBytes() const {
  return ReadNumber(path_ + "/memory.max_usage_in_bytes");
}

int64_t MemoryCgroup::OomKills() const {
  return ReadNumber(path_ + "/memory.oom_control", "oom_kill");
}

}  // namespace accel::testing
