#include "worker/job_spec.h"

#include <algorithm>

#include "engine/base/status_macros.h"
#include "rpc/job_lowering.h"

namespace accel::worker {

absl::StatusOr<train::TrainOptions> JobSpecToTrainOptions(const accel::v1::JobSpec& spec,
                                                          JobConfigReport* report) {
  ACCEL_ASSIGN_OR_RETURN(config::LoweredJob lowered, rpc::LowerJobSpec(spec));
  if (report != nullptr) {
    report->source = lowered.source;
    report->notes = lowered.notes;
  }
  return std::move(lowered.options);
}

absl::StatusOr<JobRun> JobRunFromSpec(const accel::v1::JobSpec& spec) {
  JobRun run;
  ACCEL_ASSIGN_OR_RETURN(config::LoweredJob lowered, rpc::LowerJobSpec(spec));
  run.train = std::move(lowered.options);
  run.world_size = lowered.world_size;
  run.config.source = std::move(lowered.source);
  run.config.notes = std::move(lowered.notes);
  run.threads = std::max(1, spec.resources().threads_per_process());
  run.log_every = std::max<int64_t>(1, spec.train().log_every());
  run.train.rank_stats_every = run.log_every;  // memory and traffic of every rank, per record
  run.checkpoint_dir = spec.checkpoint().dir();
  run.checkpoint_every = std::max<int64_t>(0, spec.checkpoint().every_n_steps());
  run.keep_last = std::max(0, spec.checkpoint().keep_last());
  if (spec.comm_timeout_s() > 0) run.comm_timeout = absl::Seconds(spec.comm_timeout_s());
  if (!spec.resources().device().empty()) run.device = spec.resources().device();
  return run;
}

}  // namespace accel::worker
