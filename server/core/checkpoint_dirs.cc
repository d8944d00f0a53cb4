#include "server/core/checkpoint_dirs.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/dir_owner.h"

namespace accel::server {

absl::Status CheckCheckpointDirFree(Env* env, const std::string& dir,
                                    const std::vector<JobRecord>& jobs,
                                    const std::string& state_id) {
  if (dir.empty()) return absl::OkStatus();
  const std::string normal = checkpoint::NormalDirName(dir);
  for (const JobRecord& j : jobs) {
    if (IsTerminal(j.state) || j.knobs.checkpoint_dir.empty() ||
        checkpoint::NormalDirName(j.knobs.checkpoint_dir) != normal) {
      continue;
    }
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint.dir ", dir, " is used by job ", j.id, " (", JobStateName(j.state),
                     "); give another directory or cancel it"));
  }
  absl::StatusOr<std::optional<checkpoint::CheckpointOwner>> owner = checkpoint::ReadOwner(env, dir);
  if (!owner.ok()) {
    return Annotate(owner.status(), absl::StrCat("checkpoint.dir ", dir));
  }
  if (!owner->has_value()) return absl::OkStatus();
  const checkpoint::CheckpointOwner& o = **owner;
  std::string whose = checkpoint::DescribeOwner(o);
  if (!state_id.empty() && o.daemon == absl::StrCat("acceld:", state_id)) {
    whose = absl::StrCat("job ", o.job, " (deleted)");
    for (const JobRecord& j : jobs) {
      if (j.id == o.job) whose = absl::StrCat("job ", j.id, " (", JobStateName(j.state), ")");
    }
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "checkpoint.dir ", dir, " holds the checkpoints of ", whose,
      " (its owner.json); a new job does not take them over: give another directory, or remove ",
      dir, " if they are no longer needed"));
}

}  // namespace accel::server
