// accelctl config explain --model / --model-config: the memory plan (engine/plan/memory_plan.h)
// of the lowered job, for the model, micro-batch and sequence given, on the config's world (or
// --world), with --ranks-per-machine ranks sharing a machine (default: all of them).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/config/lower.h"
#include "engine/plan/memory_plan.h"

namespace accel::client {

struct MemoryExplainArgs {
  std::string model;         // a preset name (gpt2, gpt2-medium, ...)
  std::string model_config;  // or a Hugging Face config.json (wins)
  std::optional<int64_t> seq;
  std::optional<int> ranks_per_machine;
  bool wanted() const { return !model.empty() || !model_config.empty(); }
};

// The plan for rank 0 of `lowered` (its options and world size). InvalidArgument naming the flag
// for an unknown preset, an unreadable config.json or a bad sequence length.
[[nodiscard]] absl::StatusOr<plan::MemoryPlan> ExplainMemory(
    const MemoryExplainArgs& args, const config::LoweredJob& lowered, Env* fs);

}  // namespace accel::client
