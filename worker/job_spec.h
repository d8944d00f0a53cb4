// accel.v1.JobSpec (what acceld hands a worker in its Assignment) -> the engine's TrainOptions
// plus the worker's own settings (threads, metrics cadence, checkpoints, collective deadline).
// Sharding comes from the spec's `sharding` section for now; resolving `accelerate_config_text`
// (engine/config) is wired in later and will override it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "accel/v1/job.pb.h"
#include "engine/train/trainer.h"

namespace accel::worker {

struct JobRun {
  train::TrainOptions train;
  int threads = 1;
  int64_t log_every = 10;
  std::string checkpoint_dir;    // empty: no checkpoints
  int64_t checkpoint_every = 0;  // 0: only at the end
  int keep_last = 0;             // 0: keep all
  absl::Duration comm_timeout = absl::Seconds(120);
};

// InvalidArgument naming the spec key (e.g. "sharding.strategy: ...") when a value does not map.
[[nodiscard]] absl::StatusOr<train::TrainOptions> JobSpecToTrainOptions(
    const accel::v1::JobSpec& spec);
[[nodiscard]] absl::StatusOr<JobRun> JobRunFromSpec(const accel::v1::JobSpec& spec);

}  // namespace accel::worker
