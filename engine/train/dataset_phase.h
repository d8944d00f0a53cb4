// The data phase of a rank's start (docs/data.md "In a job"): a job whose data is text, JSONL or
// chat files trains on token shards prepared once into a cache (engine/data/prepare.h). The
// lowering at submit named the train.bin (config/dataset_lowering.h); when the cache does not
// hold it yet, rank 0 prepares it, on every core, logging its progress (the job's events show
// the lines), while the other ranks wait for it to appear. Later attempts and other jobs over
// the same files, tokenizer and options find it prepared.
#pragma once

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/base/env.h"
#include "engine/config/train_options.h"

namespace accel::train {

// Returns once options.data exists (nothing to do when options.dataset is off or it is there).
// Rank 0 prepares; another rank waits at most `wait` for rank 0's directory to be complete.
// Errors: the preparation's (a bad record "FILE:LINE: ...", a missing source); FailedPrecondition
// when the sources changed since submit (the prepared key differs from the plan's); and
// DeadlineExceeded naming the path a waiting rank gave up on.
[[nodiscard]] absl::Status PrepareDatasetIfMissing(const config::TrainOptions& options, int rank,
                                                   Env* env,
                                                   absl::Duration wait = absl::Hours(2));

}  // namespace accel::train
