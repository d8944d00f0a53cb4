// Test helpers for engine/config: resolve YAML/JSON text or repository files, and compare a
// plan with an expected JSON object key by key.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "engine/config/inputs.h"
#include "engine/config/train_plan.h"

namespace accel::config::testing {

// Path of a file in the source tree (ACCEL_SOURCE_DIR is set by CMake for test targets).
std::string SourcePath(std::string_view relative);

// Resolves YAML text (and a DeepSpeed JSON text, when not empty) through ResolveDocuments.
absl::StatusOr<TrainPlan> ResolveText(std::string_view yaml, std::string_view json = "",
                                      const ConfigInputs& inputs = ConfigInputs{});
// Resolves a repository file (relative to the source root) through ResolvePlan.
absl::StatusOr<TrainPlan> ResolveFile(std::string_view relative, ConfigInputs inputs = {},
                                      std::string_view deepspeed_relative = "");

// Every key of `expected` (a JSON object, possibly nested) must equal the plan's JSON. With
// `complete`, `expected` must also name every plan key except "warnings".
::testing::AssertionResult PlanMatches(const TrainPlan& plan, std::string_view expected,
                                       bool complete = true);
// `base` with the keys of `overrides` replaced (one level deep; nested objects replace whole).
std::string Merge(std::string_view base, std::string_view overrides);

// A job as a submitted job file gives it: micro batch 2, hidden size 1024, lr 1e-4, weight
// decay 0.01, 500 steps (what JSON-file mode fills "auto" from).
ConfigInputs ExampleJob();

// True when some warning contains `needle`.
bool HasWarning(const TrainPlan& plan, std::string_view needle);

// Plan expectations shared by several tests: FSDP1 with accelerate-launch defaults and a
// TRANSFORMER_BASED_WRAP full shard, and DeepSpeed plugin-mode ZeRO-3.
extern const char kFsdpFullShardBase[];
extern const char kDeepSpeedZero3Base[];

}  // namespace accel::config::testing
