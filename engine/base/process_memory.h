// What the kernel says about this process's memory, beside the MemoryLedger's own accounting:
// its peak resident set (VmHWM in /proc/self/status), and the memory cgroup it runs in — the
// cgroup's usage and limit (v1: memory.usage_in_bytes / memory.limit_in_bytes of the
// "memory" hierarchy's path and its ancestors, the smallest limit winning; v2: memory.current /
// memory.max) — and MemAvailable from /proc/meminfo, what the memory plan's check compares
// with when no cgroup limit is set.
//
// `root` prefixes every path ("" for the real /proc and /sys; tests pass a directory laid out
// the same way). Reading never fails: what cannot be read is reported as absent (-1 / empty).
#pragma once

#include <cstdint>
#include <string>

namespace accel {

struct CgroupMemory {
  // The file the limit came from ("/sys/fs/cgroup/memory/a/b/memory.limit_in_bytes"); empty
  // when the process is in no memory cgroup or no limit is set on its path.
  std::string limit_file;
  int64_t limit = -1;  // bytes; -1: none
  int64_t usage = -1;  // bytes the cgroup holds now (of the cgroup whose limit applies); -1: unknown
};

struct ProcessMemory {
  int64_t peak_rss = -1;       // VmHWM, bytes
  int64_t rss = -1;            // VmRSS, bytes
  // RssAnon, bytes: the part of the resident set that is the process's own (heap, stacks), not
  // shared library or file pages, which the page cache holds and a child cgroup is usually
  // not charged for.
  int64_t rss_anon = -1;
  int64_t mem_available = -1;  // MemAvailable, bytes
  CgroupMemory cgroup;
};

ProcessMemory ReadProcessMemory(const std::string& root = "");
CgroupMemory ReadCgroupMemory(const std::string& root = "");

}  // namespace accel
