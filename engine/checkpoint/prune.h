// Removing step directories, for the commit (commit.cc): keep_last pruning and the replacement
// of a step saved again. Internal to engine/checkpoint.
//
// A step leaves by a rename first: DIR/step_N -> DIR/.trash-step_N, fsync(DIR), then the
// recursive delete. Loaders only open "step_<N>" names (through `latest`), so a cancel or crash
// in the middle of a delete never leaves a step with metadata but missing rank files under a
// name anything reads; the leftovers are removed by the next commit's Prune.
//
// Only the saving job's steps are pruned: a step whose metadata.json names another owner (or
// that cannot be read, so its owner is unknown) is never deleted by keep_last.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/dir_owner.h"

namespace accel::checkpoint {

inline constexpr char kTrashPrefix[] = ".trash-";

// The step of a directory entry named "step_<N>" (or "step_<N>.tmp" when tmp), or -1.
int64_t ParseStepName(const std::string& name, bool tmp);

// step_dir's metadata.json, parsed.
[[nodiscard]] absl::StatusOr<StepMetadata> ReadStepMetadata(Env* env, const std::string& step_dir);
// The owner recorded in step_dir's metadata.json (anonymous when it records none).
[[nodiscard]] absl::StatusOr<CheckpointOwner> StepOwner(Env* env, const std::string& step_dir);

// Removes DIR/<name> by renaming it to DIR/.trash-<name> (replacing an older leftover of that
// name), fsyncing DIR and deleting it recursively.
[[nodiscard]] absl::Status RemoveStepDir(Env* env, const std::string& dir,
                                         const std::string& name);

// After `latest` names `step`: deletes stale step_*.tmp directories and .trash-* leftovers and,
// with keep_last > 0, the steps `owner` wrote beyond the newest keep_last at or below `step` and
// any above it (the future of a run resumed from an earlier step); keep_best > 0 spares the
// keep_best of those steps at or below `step` with the lowest eval loss in their metadata (steps
// without one never count; ties keep the newer). Failures are logged, not returned: the new
// checkpoint is already committed.
void Prune(Env* env, const std::string& dir, int64_t step, int keep_last,
           const CheckpointOwner& owner, int keep_best = 0);

}  // namespace accel::checkpoint
