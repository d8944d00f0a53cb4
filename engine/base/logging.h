// Logging goes through spdlog. Abseil 20220623 has no absl/log.
//   ACCEL_LOG(info, "step {} loss {:.4f}", step, loss);
// Levels: trace, debug, info, warn, error, critical. The level is set once by the binary's
// main() (SetLogLevel); library code only logs.
#pragma once

#include <string_view>

#include "spdlog/spdlog.h"

#define ACCEL_LOG(level, ...) ::spdlog::level(__VA_ARGS__)

namespace accel {
// Accepts "trace", "debug", "info", "warn", "error", "off". Unknown names leave the level alone
// and return false.
bool SetLogLevel(std::string_view name);
// Prefixes every line with a tag (for example "rank 1") so interleaved rank output stays legible.
void SetLogTag(std::string_view tag);
}  // namespace accel
