// The typed plan (proto/accel/v1/plan.proto): a job lowered once, in acceld at submit, and what
// every rank trains. acceld turns its LoweredJob into a TrainingPlan (TrainingPlanFromLowered)
// and stores it; a rank turns the plan back into the engine's TrainOptions, the model's config
// and its world (PlannedJobFromPlan) without lowering again and without reading config.json.
// `accel-worker --standalone` lowers its flags once and goes through the same plan.
//
// Both directions are total over what the engine has: every TrainOptions field a rank needs,
// every field that defines the model, and the world. Names are enums in the plan; decoding
// refuses what this build does not know (InvalidArgument naming the field): an unknown enum
// value, a version above kTrainingPlanVersion, a plan without a model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "accel/v1/job.pb.h"
#include "accel/v1/plan.pb.h"
#include "engine/base/env.h"
#include "engine/config/lower.h"

namespace accel::job {

// The plan format this build writes and the newest it reads. Version 1: issue 29.
inline constexpr uint32_t kTrainingPlanVersion = 1;

// Where and how the ranks run (plan.proto PlanWorld).
struct RunWorld {
  int world_size = 1;
  int nodes = 1;
  int ranks_per_node = 1;
  std::string device = "cpu";      // cpu | cuda
  std::string launcher = "local";  // local | slurm | kubernetes | standalone
  int threads = 1;
  int64_t log_every = 10;
  double comm_timeout_s = 0;  // 0: the worker's default
};

// A plan decoded: what a rank builds its trainer from.
struct PlannedJob {
  // options.resolved_model holds `model`: ModelConfigOf hands it back without a read.
  config::TrainOptions options;
  model::ModelConfig model;
  RunWorld world;
  std::string source;              // the config files; empty: the job file alone
  std::vector<std::string> notes;  // resolver warnings and lowering notes
  uint32_t version = 0;            // the plan's version
};

// The world of a spec lowered to `world_size` ranks: resources (device, launcher, nodes,
// threads), train.log_every and comm_timeout_s, with the defaults the workers apply.
RunWorld WorldOfSpec(const accel::v1::JobSpec& spec, int world_size);

// The plan of a lowered job. InvalidArgument naming the key for a device or launcher this build
// does not know; Internal when the model does not survive the plan (a config field the plan
// does not carry: its config.json differs after the round trip).
[[nodiscard]] absl::StatusOr<accel::v1::TrainingPlan> TrainingPlanFromLowered(
    const config::LoweredJob& job, const RunWorld& world);

// The plan of a spec lowered into `job`: WorldOfSpec's world, the spec's checkpoint section
// (dir, every_n_steps, keep_last) in the options, which the lowering leaves to the worker, and
// rank_stats_every = log_every (every rank's memory and traffic on each metrics record).
[[nodiscard]] absl::StatusOr<accel::v1::TrainingPlan> TrainingPlanOfSpec(
    const accel::v1::JobSpec& spec, const config::LoweredJob& job);

// The spec through the one lowering (LowerJobSpec with check_files=false, as a stored job is
// re-planned) and into its plan: acceld's state store fills a plan for a job stored before plans
// existed with it. Errors as LowerJobSpec's.
[[nodiscard]] absl::StatusOr<accel::v1::TrainingPlan> PlanJobSpec(const accel::v1::JobSpec& spec,
                                                                  Env* env = Env::Default());

// The plan decoded. Counts one model-config read (config::NoteModelConfigRead): the rank's only
// one. InvalidArgument naming the field for an unknown enum value, a newer version or no model.
[[nodiscard]] absl::StatusOr<PlannedJob> PlannedJobFromPlan(const accel::v1::TrainingPlan& plan);

// The plan as GetJob / ListJobs / `accelctl status` show it (accel.v1.JobPlan).
accel::v1::JobPlan PlanToProto(const PlannedJob& job);

}  // namespace accel::job
