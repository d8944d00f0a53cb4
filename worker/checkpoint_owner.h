// Who a worker's checkpoint saves belong to (engine/checkpoint/dir_owner.h), in both modes:
// a daemon worker saves for its acceld job, a standalone run for itself. Only rank 0's owner is
// ever used (it claims the directory, writes the metadata and prunes).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/checkpoint/dir_owner.h"

namespace accel::worker {

// ($ACCEL_JOB_ID, "acceld:$ACCEL_STATE_ID"): the same for every attempt of the job and across
// acceld restarts, so a job resumes its own directory; "acceld" alone when acceld sent no state
// id.
checkpoint::CheckpointOwner DaemonCheckpointOwner(const std::string& job_id,
                                                  const std::string& state_id);

// A standalone run: ("standalone", "standalone:<run_id>"), where run_id is fresh and random per
// run — unless the run continues in place (resume_dir is checkpoint_dir) a directory another
// standalone run owns: then it is that run, continued, and keeps its identity (so keep_last
// goes on pruning the steps it wrote). A directory an acceld job owns keeps its owner, and the
// trainer refuses it. DataLoss for a corrupt owner file.
[[nodiscard]] absl::StatusOr<checkpoint::CheckpointOwner> StandaloneCheckpointOwner(
    Env* env, const std::string& checkpoint_dir, const std::string& resume_dir,
    const std::string& run_id);

// 16 random hex digits.
std::string RandomRunId();

}  // namespace accel::worker
