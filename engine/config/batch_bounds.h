// The largest micro-batch (sequences per rank per micro-step) and gradient accumulation
// (micro-steps per optimizer step) a job may ask for, wherever it comes from: the job file
// (job/settings_table.cc), a worker flag (ValidateTrainOptions), an Accelerate YAML or
// DeepSpeed JSON (the config readers and the batch rule). Far above any run that fits a machine,
// low enough that tokens per step and micro-steps per run stay far inside int64. 2e9 used to
// reach the worker's memory planner, which spun on it for minutes (issue 28).
#pragma once

#include <cstdint>

namespace accel::config {

inline constexpr int64_t kMaxMicroBatch = int64_t{1} << 20;
inline constexpr int64_t kMaxGradAccum = int64_t{1} << 20;

}  // namespace accel::config
