#include "bench/cpu_info.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace accel::bench {
namespace {

// The flags that select code paths here or in oneDNN: FMA and AVX2 (the fp32 baseline), the
// AVX-512 family (twice the fp32 width), int8 and bf16 dot products (avx_vnni, avx512_vnni,
// avx512_bf16), avx512_fp16, and AMX tiles (bf16 matmuls at several times the fp32 rate).
constexpr const char* kKeyFlags[] = {"avx2",        "fma",         "f16c",     "avx_vnni",
                                     "avx512f",     "avx512bw",    "avx512vl", "avx512_vnni",
                                     "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"};

}  // namespace

bool CpuInfo::Has(absl::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

CpuInfo ParseCpuInfo(absl::string_view text) {
  CpuInfo info;
  bool have_model = false, have_flags = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    const absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, colon));
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (key == "processor") {
      ++info.logical_cpus;
    } else if (key == "model name" && !have_model) {
      info.model_name = std::string(value);
      have_model = true;
    } else if (key == "flags" && !have_flags) {
      for (absl::string_view f : absl::StrSplit(value, ' ', absl::SkipWhitespace())) {
        info.flags.emplace_back(absl::StripAsciiWhitespace(f));
      }
      have_flags = true;
    }
  }
  return info;
}

absl::StatusOr<CpuInfo> ReadCpuInfo() {
  std::ifstream in("/proc/cpuinfo");
  if (!in) return absl::NotFoundError("cannot read /proc/cpuinfo");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseCpuInfo(text.str());
}

std::vector<std::string> PresentKeyFlags(const CpuInfo& info) {
  std::vector<std::string> present;
  for (const char* f : kKeyFlags) {
    if (info.Has(f)) present.emplace_back(f);
  }
  return present;
}

std::string KeyFlagsLine(const CpuInfo& info) {
  std::vector<std::string> missing;
  for (const char* f : kKeyFlags) {
    if (!info.Has(f)) missing.emplace_back(f);
  }
  std::string line = absl::StrJoin(PresentKeyFlags(info), " ");
  if (!missing.empty()) line += (line.empty() ? "no: " : "; no: ") + absl::StrJoin(missing, " ");
  return line;
}

}  // namespace accel::bench
