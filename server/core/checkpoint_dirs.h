// Checkpoint directories at submit: a directory belongs to one job
// (engine/checkpoint/dir_owner.h). A new job is refused when its checkpoint.dir is the one of a
// job that has not ended (QUEUED to RUNNING, RESTARTING included: it may not have saved yet), or
// when the directory already has an owner — the checkpoints of a job that ended (still listed
// or deleted), of another acceld's job or of a standalone run. A new job never takes over
// another job's checkpoints: it would move `latest` away from them and, with keep_last, prune
// them (what Determined and Accelerate avoid by refusing existing checkpoint folders). The
// ranks check the owner file again at the first save, for directories acceld cannot see.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/base/env.h"
#include "server/core/types.h"

namespace accel::server {

// OK, or FailedPrecondition with one line naming the other job (by `jobs`, every job acceld
// knows) and what to do; DataLoss naming the file for a corrupt owner file. `state_id` is this
// acceld's (StateStore::StateId), to tell its own deleted jobs from others'.
[[nodiscard]] absl::Status CheckCheckpointDirFree(Env* env, const std::string& dir,
                                                  const std::vector<JobRecord>& jobs,
                                                  const std::string& state_id);

}  // namespace accel::server
