#include "engine/base/process_memory.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace accel {
namespace {

// v1 reports "no limit" as a huge page-rounded number (9223372036854771712).
constexpr int64_t kUnlimited = int64_t{1} << 60;

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The number a cgroup file holds; -1 for none, unreadable, "max" or v1's unlimited.
int64_t ReadLimitFile(const std::string& path) {
  const std::string text(absl::StripAsciiWhitespace(ReadSmallFile(path)));
  int64_t v = -1;
  if (text.empty() || !absl::SimpleAtoi(text, &v) || v < 0 || v >= kUnlimited) return -1;
  return v;
}

// "VmHWM:    2201004 kB" -> bytes.
int64_t KbField(absl::string_view text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, key)) continue;
    absl::string_view rest = absl::StripAsciiWhitespace(line.substr(key.size()));
    if (absl::EndsWith(rest, "kB")) rest = absl::StripAsciiWhitespace(rest.substr(0, rest.size() - 2));
    int64_t kb = 0;
    if (absl::SimpleAtoi(rest, &kb)) return kb * 1024;
  }
  return -1;
}

// The smallest limit on `path` and its ancestors under `mount`, with the usage beside it.
CgroupMemory SmallestLimit(const std::string& mount, std::string path, const char* limit_name,
                           const char* usage_name) {
  CgroupMemory best;
  while (true) {
    const std::string dir = path == "/" || path.empty() ? mount : mount + path;
    const int64_t limit = ReadLimitFile(dir + "/" + limit_name);
    if (limit >= 0 && (best.limit < 0 || limit < best.limit)) {
      best.limit = limit;
      best.limit_file = dir + "/" + limit_name;
      const std::string usage(absl::StripAsciiWhitespace(ReadSmallFile(dir + "/" + usage_name)));
      if (!absl::SimpleAtoi(usage, &best.usage)) best.usage = -1;
    }
    if (path.empty() || path == "/") break;
    const size_t slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return best;
}

}  // namespace

CgroupMemory ReadCgroupMemory(const std::string& root) {
  const std::string self = ReadSmallFile(root + "/proc/self/cgroup");
  std::string v1_path, v2_path;
  bool has_v2 = false;
  for (absl::string_view line : absl::StrSplit(self, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    if (parts[1].empty() && parts[0] == "0") {
      has_v2 = true;
      v2_path = std::string(parts[2]);
      continue;
    }
    for (absl::string_view c : absl::StrSplit(parts[1], ',')) {
      if (c == "memory") v1_path = std::string(parts[2]);
    }
  }
  if (!v1_path.empty()) {
    return SmallestLimit(root + "/sys/fs/cgroup/memory", v1_path, "memory.limit_in_bytes",
                         "memory.usage_in_bytes");
  }
  if (has_v2) {
    return SmallestLimit(root + "/sys/fs/cgroup", v2_path, "memory.max", "memory.current");
  }
  return {};
}

ProcessMemory ReadProcessMemory(const std::string& root) {
  ProcessMemory m;
  const std::string status = ReadSmallFile(root + "/proc/self/status");
  m.peak_rss = KbField(status, "VmHWM:");
  m.rss = KbField(status, "VmRSS:");
  m.rss_anon = KbField(status, "RssAnon:");
  m.mem_available = KbField(ReadSmallFile(root + "/proc/meminfo"), "MemAvailable:");
  m.cgroup = ReadCgroupMemory(root);
  return m;
}

}  // namespace accel
