// FSDP ↔ DeepSpeed: the other vocabulary's files for a resolved plan, where an equivalent
// exists (DESIGN.md §3.1 and Accelerate's concept guide, docs/config.md "Converting").
//
// Settings with no counterpart either block the conversion (the other backend would shard or
// offload differently: hybrid sharding, ZeRO-1, DeepSpeed's separate param/optimizer offload
// or NVMe for FSDP, FSDP offload below full sharding for DeepSpeed) and give InvalidArgument
// naming each one, or are listed in `notes` (prefetch tuning, wrap policies, state-dict
// details, values that move to the job file).
// Resolving the written files gives back the same strategy, offload, precision, accumulation,
// clipping, batch sizes, checkpoint export and loading behaviour (convert_test.cc).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/config/train_plan.h"

namespace accel::config {

struct Conversion {
  std::string accelerate_yaml;  // the Accelerate YAML to hand instead
  std::string deepspeed_json;   // ConvertToDeepSpeed only: the deepspeed_config_file contents
  std::vector<std::string> notes;
};

// A non-DeepSpeed plan → an Accelerate YAML (DEEPSPEED, deepspeed_config_file: json_name) and
// a DeepSpeed JSON that uses "auto" for what the job supplies.
[[nodiscard]] absl::StatusOr<Conversion> ConvertToDeepSpeed(const TrainPlan& plan,
                                                            std::string_view json_name);
// A DeepSpeed plan → an FSDP Accelerate YAML (fsdp_version 1).
[[nodiscard]] absl::StatusOr<Conversion> ConvertToFsdp(const TrainPlan& plan);

}  // namespace accel::config
