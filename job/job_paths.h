// The paths a JobSpec names, checked at acceld's door (SubmitJob) before any of them is opened:
// data.path, model.config, model.init_weights (and every file the weights loader would open
// for it) and checkpoint.dir. (Configs travel inside the spec as texts; ParseJobFile checks the
// ones it reads for a job_file.)
#pragma once

#include "absl/status/status.h"
#include "accel/v1/job.pb.h"
#include "engine/base/env.h"
#include "engine/config/lower.h"
#include "rpc/file_access.h"

namespace accel::job {

using rpc::FileAccess;  // rpc/file_access.h: what acceld may open for a client

// Each path must be absolute: a relative one would resolve against acceld's working directory,
// not the client's (accelctl sends absolute paths; a raw client must too). InvalidArgument
// "KEY: must be an absolute path ..." otherwise. Then each must pass access.Check (the
// --data-root roots): PermissionDenied naming the key and the path.
[[nodiscard]] absl::Status CheckJobPaths(const accel::v1::JobSpec& spec, const FileAccess& access);

// The job's init_weights as the loader opens them, against the model they must fit: every
// header, the index's map, tensor names, shapes and dtypes (hf_model_file.h), so that a rank
// does not find out when it starts. InvalidArgument "model.init_weights: ...". OK without
// init_weights.
[[nodiscard]] absl::Status CheckWeightsFit(const config::LoweredJob& job, Env* env);

}  // namespace accel::job
