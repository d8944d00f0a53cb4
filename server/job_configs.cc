#include "server/job_configs.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/config/accelerate_yaml.h"
#include "engine/config/document.h"
#include "engine/config/resolve.h"
#include "engine/model/gpt2_config.h"

namespace accel::server {
namespace {

std::string SourceName(const std::string& path, const char* key) {
  return path.empty() ? std::string(key) : path;
}

// The job's values, as the daemon worker hands them to the resolver (worker/plan_options.h).
config::JobSettings JobSettingsFromSpec(const accel::v1::JobSpec& spec) {
  const auto& t = spec.train();
  config::JobSettings j;
  j.micro_batch_size = t.micro_batch();
  j.gradient_accumulation_steps = t.grad_accum();
  j.gradient_clipping = t.grad_clip();
  j.lr = t.lr();
  j.weight_decay = t.weight_decay();
  j.betas = std::array<double, 2>{t.beta1(), t.beta2()};
  j.eps = t.eps();
  j.warmup_steps = t.warmup();
  j.steps = t.steps();
  absl::StatusOr<model::Gpt2Config> model =
      spec.model().config().empty() ? model::Gpt2Preset(spec.model().preset())
                                    : model::LoadGpt2Config(Env::Default(), spec.model().config());
  if (model.ok()) j.hidden_size = model->n_embd;
  return j;
}

}  // namespace

absl::Status ValidateJobConfigs(const accel::v1::JobSpec& spec) {
  const bool has_yaml = !spec.accelerate_config_text().empty();
  const bool has_json = !spec.deepspeed_config_text().empty();
  if (!has_yaml && !has_json) return absl::OkStatus();
  const std::string yaml_source =
      SourceName(spec.accelerate_config_path(), "accelerate_config");
  const std::string json_source = SourceName(spec.deepspeed_config_path(), "deepspeed_config");
  if (!has_yaml) {
    return absl::InvalidArgumentError(absl::StrCat(
        "deepspeed_config: ", json_source,
        " needs an Accelerate config with distributed_type: DEEPSPEED (accelerate_config in the "
        "job file or submit --config)"));
  }
  ACCEL_ASSIGN_OR_RETURN(config::Document yaml,
                         config::ParseYamlDocument(spec.accelerate_config_text(), yaml_source));
  std::optional<config::Document> json;
  if (has_json) {
    config::Diagnostics peek;
    const config::AccelerateConfig accelerate = config::ReadAccelerateConfig(yaml, &peek);
    if (accelerate.distributed_type.has_value() &&
        *accelerate.distributed_type != config::DistributedType::kDeepSpeed) {
      return absl::InvalidArgumentError(absl::StrCat(
          yaml_source, ": distributed_type: a DeepSpeed config (", json_source,
          ") was given, but distributed_type is ",
          std::string(config::Name(*accelerate.distributed_type)), ", not DEEPSPEED"));
    }
    ACCEL_ASSIGN_OR_RETURN(json,
                           config::ParseJsonDocument(spec.deepspeed_config_text(), json_source));
  }
  config::ConfigInputs inputs;
  inputs.accelerate_config = yaml_source;
  inputs.deepspeed_config = has_json ? json_source : "";
  inputs.job = JobSettingsFromSpec(spec);
  inputs.job_complete = true;
  ACCEL_ASSIGN_OR_RETURN(config::TrainPlan plan,
                         config::ResolveDocuments(yaml, json ? &*json : nullptr, inputs));
  if (plan.num_processes != spec.resources().num_processes()) {
    return absl::InvalidArgumentError(absl::StrCat(
        yaml_source, ": num_processes: the config is for ", plan.num_processes,
        " processes but resources.num_processes is ", spec.resources().num_processes()));
  }
  return absl::OkStatus();
}

}  // namespace accel::server
