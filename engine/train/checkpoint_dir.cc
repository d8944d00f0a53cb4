// Trainer::AgreeOnCheckpointDir: a checkpoint directory belongs to one job
// (engine/checkpoint/dir_owner.h). Rank 0 alone reads (and, for the first save, writes) the
// owner file, so the gang never disagrees about it; the outcome travels by broadcast, and a rank
// told "refused" reads the owner file itself to say whose directory it is, so every rank's error
// names the owner (acceld reports the first failing rank's).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/dir_owner.h"
#include "engine/tensor/dtype.h"
#include "engine/train/trainer.h"

namespace accel::train {

absl::Status Trainer::AgreeOnCheckpointDir(const std::string& dir, bool claim) {
  if (std::find(claimed_dirs_.begin(), claimed_dirs_.end(), dir) != claimed_dirs_.end()) {
    return absl::OkStatus();
  }
  const checkpoint::CheckpointOwner& owner = options_.checkpoint_owner;
  absl::Status mine;
  if (rank() == 0) {
    mine = claim ? checkpoint::ClaimDir(env_, dir, owner) : checkpoint::CheckOwner(env_, dir, owner);
  }
  // A flag in two f32 slots (the broadcast copies bytes), as checkpointing.cc's outcomes.
  int64_t ok = mine.ok() ? 1 : 0;
  if (world() > 1) {
    absl::Status sent =
        host_world_->Broadcast(&ok, 2, DType::kF32, /*root=*/0)->Wait(absl::Seconds(300));
    // Unavailable or DeadlineExceeded, as it came: the caller says what every rank must do.
    if (!sent.ok()) return sent;
  }
  if (!mine.ok()) return mine;
  if (ok != 1) {
    absl::Status why = checkpoint::CheckOwner(env_, dir, owner);
    if (!why.ok()) return why;
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint.dir ", dir, ": rank 0 refused it (its log says why: another job's "
        "directory, or one it could not claim)"));
  }
  if (claim) claimed_dirs_.push_back(dir);
  return absl::OkStatus();
}

}  // namespace accel::train
