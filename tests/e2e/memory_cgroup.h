// Test helper: a cgroup v1 memory cgroup with a limit, for running a child process under it.
// The limit covers the page cache too, as a container's does (reference/zero_infinity.md §5.3),
// so a test can show that offload really bounds memory, not only the process's anonymous pages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace accel::testing {

class MemoryCgroup {
 public:
  // Why this machine or build cannot run memory-cgroup tests (not root, no v1 memory
  // controller, an AddressSanitizer build), or "" when it can.
  static std::string WhyUnavailable();
  // Creates <name> below this process's own memory cgroup (/sys/fs/cgroup/memory/<own>/<name>)
  // with memory.limit_in_bytes = limit_bytes.
  static absl::StatusOr<MemoryCgroup> Create(const std::string& name, int64_t limit_bytes);
  MemoryCgroup(MemoryCgroup&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  MemoryCgroup& operator=(MemoryCgroup&&) = delete;
  ~MemoryCgroup();  // removes the cgroup (its processes must have exited)

  // argv wrapped so that the process joins this cgroup before it execs: sh -c 'echo $$ >
  // cgroup.procs; exec "$@"'.
  std::vector<std::string> Wrap(const std::vector<std::string>& argv) const;
  int64_t MaxUsageBytes() const;  // memory.max_usage_in_bytes: the peak, page cache included
  int64_t OomKills() const;       // memory.oom_control's oom_kill counter
  const std::string& path() const { return path_; }

 private:
  explicit MemoryCgroup(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace accel::testing
