// The config check acceld runs at submit: a JobSpec's Accelerate YAML and DeepSpeed JSON
// (accelerate_config_text, deepspeed_config_text) are resolved with engine/config's resolver
// the way each worker will resolve them (the job's values fill "auto", job_complete, no
// environment), so a config that would fail on every rank fails here instead, before anything
// is queued.
#pragma once

#include "absl/status/status.h"
#include "accel/v1/job.pb.h"

namespace accel::server {

// OK when the spec carries no config. InvalidArgument otherwise, every problem the resolver
// found on its own line, each naming the file (the path the client read it from) and the key
// path, e.g. "fsdp.yaml:3:1: fsdp_config.fsdp_sharding_strategy: unknown value ...".
// Also rejected: a DeepSpeed JSON without an Accelerate config, or with one whose
// distributed_type is not DEEPSPEED; a config whose num_processes differs from
// resources.num_processes.
[[nodiscard]] absl::Status ValidateJobConfigs(const accel::v1::JobSpec& spec);

}  // namespace accel::server
