// What a benchmark's reader needs to know about the CPU it ran on: the model name and the ISA
// flags that decide which kernels run (AVX2/FMA, AVX-512, AVX512_BF16, AMX), read from
// /proc/cpuinfo. Benchmarks print it first, beside the measured FMA peak (fma_peak.h), because
// "of peak" and bf16-vs-fp32 figures mean little without it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accel::bench {

struct CpuInfo {
  std::string model_name;          // the first "model name" line's value ("" when absent)
  std::vector<std::string> flags;  // the first "flags" line, split on whitespace, in file order
  int logical_cpus = 0;            // the number of "processor" lines

  bool Has(absl::string_view flag) const;
};

// Parses /proc/cpuinfo's text (x86 layout: "key\t: value" lines, one block per processor).
// Pure: a text without those keys yields empty fields, never an error.
CpuInfo ParseCpuInfo(absl::string_view text);

// Reads and parses /proc/cpuinfo; NotFound where the file cannot be read.
[[nodiscard]] absl::StatusOr<CpuInfo> ReadCpuInfo();

// The ISA flags that matter to accel's kernels, in a fixed order: present ones first, then the
// missing ones after "no:", e.g. "avx2 fma f16c; no: avx512f avx512_bf16 amx_bf16 amx_tile".
std::string KeyFlagsLine(const CpuInfo& info);

// The present key flags alone (for JSON).
std::vector<std::string> PresentKeyFlags(const CpuInfo& info);

}  // namespace accel::bench
