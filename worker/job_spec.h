// The typed plan (accel.v1.TrainingPlan, what acceld hands a worker in its Assignment) -> what
// this rank runs: the engine's TrainOptions with the model already read, plus the worker's own
// settings (threads, metrics cadence, checkpoints, collective deadline). No lowering happens
// here: acceld lowered the job once at submit (job/plan_proto.h). JobRunFromSpec and
// JobSpecToTrainOptions lower a spec once and go through the same plan (tests, tools).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "accel/v1/job.pb.h"
#include "accel/v1/plan.pb.h"
#include "accel/v1/worker.pb.h"
#include "engine/train/trainer.h"

namespace accel::worker {

// What the spec's config resolved to, for the worker's log.
struct JobConfigReport {
  std::string source;              // "fsdp.yaml" or "ds.yaml + ds.json"; empty: no config
  std::vector<std::string> notes;  // resolver warnings and lowering notes
};

struct JobRun {
  train::TrainOptions train;
  int world_size = 1;  // the gang's size, as lowered
  int threads = 1;
  int64_t log_every = 10;
  std::string checkpoint_dir;    // empty: no checkpoints
  int64_t checkpoint_every = 0;  // 0: only at the end
  int keep_last = 0;             // 0: keep all
  absl::Duration comm_timeout = absl::Seconds(120);
  std::string device = "cpu";  // resources.device: cpu | cuda (train::DeviceTrainer)
  JobConfigReport config;
  uint32_t plan_version = 0;  // the typed plan's version it was built from
};

// train.sample.heartbeat_s for a communicator deadline: a quarter of it, at most 1 s, so the
// ranks waiting for rank 0's sample never reach the deadline (train/sample_heartbeat.h).
double SampleHeartbeatSeconds(absl::Duration comm_timeout);

// The rank's run from its plan: no lowering, no config.json read (the plan carries the model;
// train.resolved_model holds it). InvalidArgument naming the field for a plan this build cannot
// read (job::PlannedJobFromPlan).
[[nodiscard]] absl::StatusOr<JobRun> JobRunFromPlan(const accel::v1::TrainingPlan& plan);
// A daemon rank's run: its assignment's plan (InvalidArgument when it carries none: this worker
// never lowers), with one log line saying where the plan came from.
[[nodiscard]] absl::StatusOr<JobRun> JobRunFromAssignment(const accel::v1::Assignment& assignment);

// The spec lowered once, into its plan, and back (as acceld and a worker do between them). The
// lowered options. InvalidArgument naming the spec key (e.g. "sharding.strategy: ...") when
// a value does not map, or the config file and key path when the config does not lower.
// `report` (optional) receives the source and notes.
[[nodiscard]] absl::StatusOr<train::TrainOptions> JobSpecToTrainOptions(
    const accel::v1::JobSpec& spec, JobConfigReport* report = nullptr);
[[nodiscard]] absl::StatusOr<JobRun> JobRunFromSpec(const accel::v1::JobSpec& spec);

}  // namespace accel::worker
