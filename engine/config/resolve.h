// Resolution: Accelerate YAML + optional DeepSpeed JSON + environment + job → one TrainPlan,
// the way `accelerate launch` and Accelerate's plugins would resolve the same files, with the
// silent cases made loud (docs/config.md has every rule):
//   precedence   explicit value (command line > file) > environment (FSDP_*, ACCELERATE_*) >
//                default (DefaultProfile)
//   "auto"       filled from the source Accelerate uses; an "auto" nothing fills is an error
//   conflicts    a key set in both the YAML's deepspeed_config and the JSON, or a YAML
//                mixed_precision together with a JSON file, is an error (as in Accelerate)
//   batch rule   train_batch_size = micro × accumulation × num_processes
// Errors are InvalidArgument listing every problem, one per line, each naming the file (or
// "environment"), the key path and, for YAML, line and column; NotFound for a missing file.
// Thread-safe (no shared state).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/config/diagnostics.h"
#include "engine/config/inputs.h"
#include "engine/config/train_plan.h"

namespace accel::config {

// Reads inputs.accelerate_config and the DeepSpeed JSON it names (or inputs.deepspeed_config,
// or ACCELERATE_DEEPSPEED_CONFIG_FILE) through `env`. A relative deepspeed_config_file is looked
// up beside the YAML first, then as given.
[[nodiscard]] absl::StatusOr<TrainPlan> ResolvePlan(const ConfigInputs& inputs,
                                                    Env* env = Env::Default());

// Whether a file given where an Accelerate YAML goes is a DeepSpeed JSON: its name ends in
// ".json", or its text is a JSON object without distributed_type. ResolvePlan (and so `accelctl
// config explain|convert|validate`) runs such a file under ImpliedDeepSpeedYaml, as
// `accel-worker --deepspeed-config` and Lower do with a JSON given alone.
bool IsDeepSpeedJsonFile(std::string_view path, std::string_view text);
// The Accelerate YAML a DeepSpeed JSON given alone runs under: DEEPSPEED on `num_processes`.
[[nodiscard]] absl::StatusOr<Document> ImpliedDeepSpeedYaml(int num_processes);

// The same on documents already parsed (document.h). `deepspeed` is the JSON, or nullptr for
// DeepSpeed's plugin mode (settings from the YAML's deepspeed_config only). Any
// deepspeed_config_file named in the YAML is not opened here.
[[nodiscard]] absl::StatusOr<TrainPlan> ResolveDocuments(const Document& accelerate,
                                                         const Document* deepspeed,
                                                         const ConfigInputs& inputs);

}  // namespace accel::config
