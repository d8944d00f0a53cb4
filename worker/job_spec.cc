#include "worker/job_spec.h"

#include <algorithm>

#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "job/job_lowering.h"
#include "job/plan_proto.h"

namespace accel::worker {

absl::StatusOr<train::TrainOptions> JobSpecToTrainOptions(const accel::v1::JobSpec& spec,
                                                          JobConfigReport* report) {
  ACCEL_ASSIGN_OR_RETURN(JobRun run, JobRunFromSpec(spec));
  if (report != nullptr) *report = run.config;
  // As the lowering returned them: the ranks' statistics cadence is the worker's (the plan's).
  run.train.rank_stats_every = 0;
  return std::move(run.train);
}

absl::StatusOr<JobRun> JobRunFromSpec(const accel::v1::JobSpec& spec) {
  ACCEL_ASSIGN_OR_RETURN(config::LoweredJob lowered, job::LowerJobSpec(spec));
  ACCEL_ASSIGN_OR_RETURN(accel::v1::TrainingPlan plan, job::TrainingPlanOfSpec(spec, lowered));
  return JobRunFromPlan(plan);
}

absl::StatusOr<JobRun> JobRunFromAssignment(const accel::v1::Assignment& assignment) {
  if (!assignment.has_plan()) {
    return absl::InvalidArgumentError(
        "the assignment carries no training plan (an acceld older than the typed plan?); "
        "this worker does not lower a job itself");
  }
  ACCEL_ASSIGN_OR_RETURN(JobRun run, JobRunFromPlan(assignment.plan()));
  ACCEL_LOG(info, "plan: acceld's typed plan from the assignment (version {}, lowered once at "
                  "submit; the model, {}, read from the plan, not from a config.json)",
            run.plan_version, run.train.resolved_model->Describe());
  return run;
}

double SampleHeartbeatSeconds(absl::Duration comm_timeout) {
  return std::min(1.0, absl::ToDoubleSeconds(comm_timeout) / 4);
}

absl::StatusOr<JobRun> JobRunFromPlan(const accel::v1::TrainingPlan& plan) {
  ACCEL_ASSIGN_OR_RETURN(job::PlannedJob planned, job::PlannedJobFromPlan(plan));
  JobRun run;
  run.train = std::move(planned.options);
  run.world_size = planned.world.world_size;
  run.config.source = std::move(planned.source);
  run.config.notes = std::move(planned.notes);
  run.threads = planned.world.threads;
  run.log_every = planned.world.log_every;
  run.checkpoint_dir = run.train.checkpoint_dir;
  run.checkpoint_every = std::max<int64_t>(0, run.train.checkpoint_every);
  run.keep_last = std::max(0, run.train.keep_last);
  if (planned.world.comm_timeout_s > 0) {
    run.comm_timeout = absl::Seconds(planned.world.comm_timeout_s);
  }
  run.train.sample.heartbeat_s = SampleHeartbeatSeconds(run.comm_timeout);
  run.device = planned.world.device;
  run.plan_version = planned.version;
  return run;
}

}  // namespace accel::worker
