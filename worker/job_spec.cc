#include "worker/job_spec.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/config/document.h"
#include "engine/config/resolve.h"
#include "engine/optim/lr_schedule.h"
#include "engine/shard/shard_plan.h"
#include "worker/plan_options.h"

namespace accel::worker {
namespace {

absl::Status Keyed(const char* key, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat(key, ": ", s.message()));
}

// The spec's Accelerate YAML (+ DeepSpeed JSON), resolved as acceld checked it at submit
// (server/job_configs.h: the job's values fill "auto", no environment) and applied over `o`,
// replacing what the `sharding` section set. Errors name the file the client read and the key.
absl::Status ApplySpecConfig(const accel::v1::JobSpec& spec, train::TrainOptions& o,
                             JobConfigReport& report) {
  const bool has_yaml = !spec.accelerate_config_text().empty();
  const bool has_json = !spec.deepspeed_config_text().empty();
  if (!has_yaml && !has_json) return absl::OkStatus();
  const std::string yaml_source = spec.accelerate_config_path().empty()
                                      ? "accelerate_config"
                                      : spec.accelerate_config_path();
  const std::string json_source = spec.deepspeed_config_path().empty()
                                      ? "deepspeed_config"
                                      : spec.deepspeed_config_path();
  if (!has_yaml) {
    return absl::InvalidArgumentError(absl::StrCat(
        "deepspeed_config: ", json_source,
        " needs an Accelerate config with distributed_type: DEEPSPEED"));
  }
  ACCEL_ASSIGN_OR_RETURN(config::Document yaml,
                         config::ParseYamlDocument(spec.accelerate_config_text(), yaml_source));
  std::optional<config::Document> json;
  if (has_json) {
    ACCEL_ASSIGN_OR_RETURN(json,
                           config::ParseJsonDocument(spec.deepspeed_config_text(), json_source));
  }
  config::ConfigInputs in;
  in.accelerate_config = yaml_source;
  in.deepspeed_config = has_json ? json_source : "";
  in.job = JobSettingsFromOptions(o);
  in.job_complete = true;
  ACCEL_ASSIGN_OR_RETURN(config::TrainPlan plan,
                         config::ResolveDocuments(yaml, json ? &*json : nullptr, in));
  ACCEL_RETURN_IF_ERROR(
      CheckPlanWorld(plan, spec.resources().num_processes(), "resources.num_processes"));
  report.source = has_json ? absl::StrCat(yaml_source, " + ", json_source) : yaml_source;
  report.notes = plan.warnings;
  return ApplyTrainPlan(plan, &o, &report.notes);
}

}  // namespace

absl::StatusOr<train::TrainOptions> JobSpecToTrainOptions(const accel::v1::JobSpec& spec,
                                                          JobConfigReport* report) {
  train::TrainOptions o;
  const auto& m = spec.model();
  o.model = m.preset().empty() ? o.model : m.preset();
  o.model_config = m.config();
  o.init_weights = m.init_weights();
  o.data = spec.data().path();
  if (spec.data().has_shuffle_seed()) o.shuffle_seed = spec.data().shuffle_seed();
  const auto& t = spec.train();
  o.batch = t.micro_batch();
  o.seq = t.seq_len();
  o.steps = t.steps();
  o.grad_accum = t.grad_accum();
  absl::StatusOr<optim::ScheduleKind> kind = optim::ParseScheduleKind(t.schedule());
  if (!kind.ok()) return Keyed("train.schedule", kind.status());
  o.schedule.kind = *kind;
  o.schedule.base_lr = static_cast<float>(t.lr());
  o.schedule.min_lr = static_cast<float>(t.min_lr());
  o.schedule.warmup_steps = t.warmup();
  o.adamw.beta1 = static_cast<float>(t.beta1());
  o.adamw.beta2 = static_cast<float>(t.beta2());
  o.adamw.eps = static_cast<float>(t.eps());
  o.adamw.weight_decay = static_cast<float>(t.weight_decay());
  o.grad_clip = static_cast<float>(t.grad_clip());
  o.seed = t.seed();
  const auto& sh = spec.sharding();
  absl::StatusOr<shard::Strategy> strategy =
      shard::ParseStrategy(sh.strategy().empty() ? "no_shard" : sh.strategy());
  if (!strategy.ok()) return Keyed("sharding.strategy", strategy.status());
  o.shard.strategy = *strategy;
  o.shard.hybrid_group_size = sh.hybrid_group_size();
  o.shard.forward_prefetch = sh.forward_prefetch();
  const std::string& bp = sh.backward_prefetch();
  if (bp.empty() || bp == "backward_pre") {
    o.shard.backward_prefetch = shard::BackwardPrefetch::kBackwardPre;
  } else if (bp == "backward_post") {
    o.shard.backward_prefetch = shard::BackwardPrefetch::kBackwardPost;
  } else if (bp == "none") {
    o.shard.backward_prefetch = shard::BackwardPrefetch::kNone;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "sharding.backward_prefetch: must be backward_pre, backward_post or none, got ", bp));
  }
  if (sh.has_reshard_after_forward()) o.shard.reshard_after_forward = sh.reshard_after_forward();
  o.sync_module_states = sh.sync_module_states();
  JobConfigReport unused;
  ACCEL_RETURN_IF_ERROR(ApplySpecConfig(spec, o, report != nullptr ? *report : unused));
  return o;
}

absl::StatusOr<JobRun> JobRunFromSpec(const accel::v1::JobSpec& spec) {
  JobRun run;
  ACCEL_ASSIGN_OR_RETURN(run.train, JobSpecToTrainOptions(spec, &run.config));
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
