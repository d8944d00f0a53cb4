// A JobSpec through the one lowering (engine/config/lower.h): what acceld checks at submit and
// stores with the job, and what every daemon worker trains. Both sides call LowerJobSpec on the
// same spec, so a job that submit accepts is the job its workers run.
//
// The spec's own train/model/data/sharding keys are the job (job::JobOptionsFromSpec,
// job/job_options.h); its Accelerate YAML and DeepSpeed
// JSON texts (accelerate_config_text, deepspeed_config_text) are the config, resolved without
// the environment (daemon workers do not see the user's shell). resources.num_processes, when
// set, is the launcher's count and wins over the config's num_processes with a warning; unset,
// the config's count is the job's (1 without a config).
#pragma once

#include "absl/status/statusor.h"
#include "accel/v1/job.pb.h"
#include "engine/base/env.h"
#include "engine/config/lower.h"

namespace accel::job {

// The lowered job. check_files: the files the options name must be usable from here (the NVMe
// offload directory); acceld and its workers share a file system.
// `texts`: whether errors may quote the config texts the spec carries. Echo::kContent only when
// the client sent them itself (SubmitJob with a spec); acceld's reads of a job_file and the
// workers' lowering are kPositionsOnly. A config the spec names without its text is read here
// and never quoted (docs/rpc.md, "What acceld reads on a client's behalf").
[[nodiscard]] absl::StatusOr<config::LoweredJob> LowerJobSpec(const accel::v1::JobSpec& spec,
                                                              bool check_files = true,
                                                              Env* env = Env::Default(),
                                                              Echo texts = Echo::kPositionsOnly);

// The spec as it runs: resources.num_processes is the gang's size, and the `sharding` section
// holds what the lowering decided (strategy, hybrid group, prefetch, resharding, module-state
// sync), and a model given by its config.json carries no preset, so no stored field shows a
// default the config replaced.
accel::v1::JobSpec ResolvedSpec(const accel::v1::JobSpec& spec, const config::LoweredJob& job);

// The plan as GetJob / ListJobs / `accelctl status` show it. `device` is resources.device.
accel::v1::JobPlan PlanToProto(const config::LoweredJob& job, const std::string& device);

}  // namespace accel::job
