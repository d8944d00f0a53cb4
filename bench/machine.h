// The header every training and kernel benchmark prints first: the CPU (model name, the ISA
// flags that pick kernels) and its measured fp32 FMA peak per core and with all threads at once
// (fma_peak.h), as text lines and as JSON, so "of peak" figures carry their yardstick.
#pragma once

#include <string>

#include "bench/cpu_info.h"
#include "bench/fma_peak.h"
#include "nlohmann/json.hpp"

namespace accel::bench {

struct Machine {
  CpuInfo cpu;  // empty fields where /proc/cpuinfo cannot be read
  FmaPeak peak;
};

// Reads /proc/cpuinfo and measures the peak with `threads` threads (about a second).
Machine MeasureMachine(int threads);

// Three lines: "cpu: ...", "flags: ...", "fp32 FMA peak: ...", each ending in '\n'.
std::string MachineText(const Machine& m);

// {"cpu": {"model_name", "logical_cpus", "key_flags", "flags_line"}, "fma_peak": {...}}.
nlohmann::json MachineJson(const Machine& m);

}  // namespace accel::bench
