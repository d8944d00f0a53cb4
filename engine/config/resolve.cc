// Entry points, file loading, and the settings every distributed type shares (processes,
// machines, torch-side precision).
#include "engine/config/resolve.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/config/resolve_internal.h"
#include "engine/config/batch_bounds.h"

namespace accel::config {
namespace internal {

void Context::MissingJobValue(std::string_view source, std::string_view path,
                              std::string_view what) {
  if (inputs.job_complete) {
    diag->Error(source, path, absl::StrCat("needs ", std::string(what),
                                           ", which the job does not give"));
  } else {
    pending_.push_back(absl::StrCat(std::string(path), " (", std::string(what), ")"));
  }
}

void Context::FlushPending() {
  if (pending_.empty()) return;
  diag->Warn("job", "", absl::StrCat("left unset until the job is known: ",
                                     absl::StrJoin(pending_, ", ")));
  pending_.clear();
}

void ResolveProcesses(Context& c) {
  TrainPlan& p = c.plan;
  const bool single = c.plan.distributed_type == DistributedType::kNo;
  if (c.inputs.num_processes.has_value()) {
    const std::string& source = c.inputs.num_processes_source;
    if (*c.inputs.num_processes < 1) {
      c.diag->Error("command line", source, "must be at least 1");
    }
    p.num_processes = *c.inputs.num_processes;
    // The launcher's count wins, as `accelerate launch --num_processes` does; say so.
    if (c.yaml.num_processes.has_value() && *c.yaml.num_processes != p.num_processes) {
      c.YamlWarn({"num_processes"},
                 absl::StrCat("the file says ", *c.yaml.num_processes, ", ", source, " says ",
                              p.num_processes, "; running ", p.num_processes, " (", source,
                              " wins, as accelerate launch --num_processes does)"));
    }
  } else if (c.yaml.num_processes.has_value()) {
    p.num_processes = *c.yaml.num_processes;
  } else if (single) {
    p.num_processes = 1;
  } else {
    c.YamlError({"num_processes"},
                "not set; give num_processes in the file or pass --num-processes (Accelerate: "
                "\"You need to manually pass in --num_processes using this config yaml.\")");
  }
  if (single && p.num_processes > 1) {
    c.YamlWarn({"num_processes"}, absl::StrCat("distributed_type NO runs one process; ",
                                               p.num_processes, " read as 1"));
    p.num_processes = 1;
  }
  p.num_machines = c.yaml.num_machines.value_or(1);
  if (c.inputs.num_machines.has_value()) {
    if (c.yaml.num_machines.has_value() && *c.yaml.num_machines != *c.inputs.num_machines) {
      c.YamlWarn({"num_machines"},
                 absl::StrCat("the file says ", *c.yaml.num_machines, ", ",
                              c.inputs.num_machines_source, " says ", *c.inputs.num_machines,
                              "; running on ", *c.inputs.num_machines, " (the launcher's wins)"));
    }
    p.num_machines = std::max(1, *c.inputs.num_machines);
  }
  p.machine_rank = c.yaml.machine_rank.value_or(0);
  if (p.machine_rank >= p.num_machines) {
    c.YamlError({"machine_rank"}, absl::StrCat(p.machine_rank, " is not below num_machines ",
                                               p.num_machines));
  }
  if (p.num_processes > 0 && p.num_processes % p.num_machines != 0) {
    c.YamlError({"num_processes"},
                absl::StrCat(p.num_processes, " processes do not divide evenly over ",
                             p.num_machines, " machines (num_processes is the total)"));
  }
  p.shard_group_size = std::max(1, p.num_processes);
}

void ValidateJob(Context& c) {
  JobSettings& job = c.mutable_job();
  auto check_int = [&](std::optional<int64_t>& v, const char* name, int64_t min, int64_t max) {
    if (v && (*v < min || *v > max)) {
      c.diag->Error("job", name, absl::StrCat(*v, " is out of range [", min, ", ", max, "]"));
      v.reset();
    }
  };
  auto check_real = [&](std::optional<double>& v, const char* name, double min, double max) {
    if (v && !(*v >= min && *v <= max)) {
      c.diag->Error("job", name, absl::StrCat(*v, " is out of range [", min, ", ", max, "]"));
      v.reset();
    }
  };
  check_int(job.micro_batch_size, "micro_batch_size", 1, kMaxMicroBatch);
  check_int(job.gradient_accumulation_steps, "gradient_accumulation_steps", 1, kMaxGradAccum);
  check_int(job.warmup_steps, "warmup_steps", 0, int64_t{1} << 40);
  check_int(job.steps, "steps", 1, int64_t{1} << 40);
  check_int(job.hidden_size, "hidden_size", 1, 1 << 24);
  check_real(job.gradient_clipping, "gradient_clipping", 0, 1e30);
  check_real(job.lr, "lr", 0, 1e30);
  check_real(job.weight_decay, "weight_decay", 0, 1e30);
  check_real(job.eps, "eps", 0, 1);
  if (job.betas && !((*job.betas)[0] >= 0 && (*job.betas)[0] < 1 && (*job.betas)[1] >= 0 &&
                     (*job.betas)[1] < 1)) {
    c.diag->Error("job", "betas", "must both be in [0, 1)");
    job.betas.reset();
  }
}

PrecisionMode RequestedPrecision(Context& c, bool include_yaml) {
  if (c.inputs.mixed_precision.has_value()) return *c.inputs.mixed_precision;
  if (include_yaml && c.yaml.mixed_precision.has_value()) return *c.yaml.mixed_precision;
  const KeyPath var = {"ACCELERATE_MIXED_PRECISION"};
  if (c.env.Has(var)) {
    if (EqualsIgnoreCase(c.env.Find(var)->get<std::string>(), "fp8")) {
      c.env.Error(var, "\"fp8\" is not supported by this engine (use bf16)");
      return PrecisionMode::kNo;
    }
    static const std::vector<EnumName<PrecisionMode>> kNames = {
        {"no", PrecisionMode::kNo}, {"fp16", PrecisionMode::kFp16},
        {"bf16", PrecisionMode::kBf16}};
    if (auto mode = c.env.Enum(var, kNames)) return *mode;
  }
  return PrecisionMode::kNo;
}

void ResolveTorchPrecision(Context& c) {
  // FSDP and DDP: with mixed precision, fp32 master parameters and optimizer state and a
  // low-precision compute copy; without it, everything stays in the dtype the weights were
  // loaded in (a bf16 checkpoint trains in bf16).
  MixedPrecisionPlan& mp = c.plan.mixed_precision;
  const FloatType loaded = c.job().load_dtype.value_or(FloatType::kFp32);
  const bool fsdp = c.plan.distributed_type == DistributedType::kFsdp;
  switch (mp.mode) {
    case PrecisionMode::kNo:
      mp.param_dtype = mp.reduce_dtype = mp.master_dtype = mp.optimizer_dtype = loaded;
      break;
    case PrecisionMode::kBf16:
    case PrecisionMode::kFp16: {
      const FloatType low =
          mp.mode == PrecisionMode::kBf16 ? FloatType::kBf16 : FloatType::kFp16;
      mp.param_dtype = low;
      // FSDP's MixedPrecision sets reduce_dtype to the same dtype; DDP under autocast reduces
      // the fp32 gradients of its fp32 parameters.
      mp.reduce_dtype = fsdp ? low : FloatType::kFp32;
      mp.master_dtype = FloatType::kFp32;
      mp.optimizer_dtype = FloatType::kFp32;
      break;
    }
  }
  if (mp.mode == PrecisionMode::kFp16) {
    // torch.amp.GradScaler / ShardedGradScaler defaults: 2^16, growth every 2000 clean steps,
    // halve on every overflow, no floor.
    c.plan.loss_scaling = LossScalingPlan{16, 2000, 1, 0};
  }
}

}  // namespace internal

namespace {

// deepspeed_config_file / --deepspeed-config / ACCELERATE_DEEPSPEED_CONFIG_FILE, in that order
// of precedence reversed (command line first). "none" is Accelerate's "not set".
std::string DeepSpeedJsonPath(const ConfigInputs& inputs, const AccelerateConfig& yaml) {
  if (!inputs.deepspeed_config.empty()) return inputs.deepspeed_config;
  if (yaml.deepspeed.deepspeed_config_file.has_value() &&
      *yaml.deepspeed.deepspeed_config_file != "none") {
    return *yaml.deepspeed.deepspeed_config_file;
  }
  auto it = inputs.env.find("ACCELERATE_DEEPSPEED_CONFIG_FILE");
  if (it != inputs.env.end() && !it->second.empty() && it->second != "none") return it->second;
  return "";
}

}  // namespace

bool IsDeepSpeedJsonFile(std::string_view path, std::string_view text) {
  if (absl::EndsWithIgnoreCase(absl::string_view(path.data(), path.size()), ".json")) return true;
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || text[start] != '{') return false;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && !j.contains("distributed_type");
}

absl::StatusOr<Document> ImpliedDeepSpeedYaml(int num_processes) {
  return ParseYamlDocument(
      absl::StrCat("distributed_type: DEEPSPEED\nnum_processes: ", num_processes, "\n"),
      "(implied accelerate config)");
}

absl::StatusOr<TrainPlan> ResolveDocuments(const Document& accelerate, const Document* deepspeed,
                                           const ConfigInputs& inputs) {
  Diagnostics diag;
  const AccelerateConfig yaml = ReadAccelerateConfig(accelerate, &diag);
  internal::Context c(inputs, accelerate, yaml, &diag);
  if (!yaml.distributed_type.has_value()) return diag.ToStatus();
  c.plan.distributed_type = *yaml.distributed_type;
  internal::ValidateJob(c);
  internal::ResolveProcesses(c);

  const bool is_ds = c.plan.distributed_type == DistributedType::kDeepSpeed;
  const bool is_fsdp = c.plan.distributed_type == DistributedType::kFsdp;
  const std::string type(Name(c.plan.distributed_type));
  if (yaml.fsdp.present && !is_fsdp) {
    c.YamlWarn({"fsdp_config"}, absl::StrCat("ignored: distributed_type is ", type));
  }
  if (yaml.deepspeed.present && !is_ds) {
    c.YamlWarn({"deepspeed_config"}, absl::StrCat("ignored: distributed_type is ", type));
  }
  if (yaml.parallelism.present && !is_fsdp) {
    c.YamlError({"parallelism_config"},
                "needs distributed_type FSDP with fsdp_version 2 (Accelerate: \"You cannot use "
                "--use_parallelism_config without --use_fsdp and --fsdp_version=2.\")");
  }

  if (is_ds) {
    std::optional<DeepSpeedJson> json;
    if (deepspeed != nullptr) json = ReadDeepSpeedJson(*deepspeed, &diag);
    internal::ResolveDeepSpeed(c, json ? &*json : nullptr);
  } else if (is_fsdp) {
    internal::ResolveFsdp(c);
  } else {
    internal::ResolveDdp(c);
  }
  c.FlushPending();
  ACCEL_RETURN_IF_ERROR(diag.ToStatus());
  c.plan.warnings = diag.warnings();
  return std::move(c.plan);
}

absl::StatusOr<TrainPlan> ResolvePlan(const ConfigInputs& inputs, Env* env) {
  if (inputs.accelerate_config.empty()) {
    return absl::InvalidArgumentError("no Accelerate config file given");
  }
  ACCEL_ASSIGN_OR_RETURN(std::string yaml_text,
                         ReadFileToString(env, inputs.accelerate_config));
  if (inputs.deepspeed_config.empty() &&
      IsDeepSpeedJsonFile(inputs.accelerate_config, yaml_text)) {
    ACCEL_ASSIGN_OR_RETURN(Document json_doc, ParseJsonDocument(yaml_text,
                                                                inputs.accelerate_config,
                                                                inputs.echo));
    ACCEL_ASSIGN_OR_RETURN(Document implied,
                           ImpliedDeepSpeedYaml(inputs.num_processes.value_or(1)));
    return ResolveDocuments(implied, &json_doc, inputs);
  }
  ACCEL_ASSIGN_OR_RETURN(Document yaml_doc,
                         ParseYamlDocument(yaml_text, inputs.accelerate_config, inputs.echo));

  // Peek at the YAML for the JSON's path; ResolveDocuments reports the YAML's own problems.
  Diagnostics peek;
  const AccelerateConfig yaml = ReadAccelerateConfig(yaml_doc, &peek);
  std::optional<Document> json_doc;
  if (!inputs.deepspeed_config.empty() && yaml.distributed_type.has_value() &&
      *yaml.distributed_type != DistributedType::kDeepSpeed) {
    return absl::InvalidArgumentError(absl::StrCat(
        inputs.accelerate_config, ": distributed_type: a DeepSpeed config (",
        inputs.deepspeed_config, ") was given, but distributed_type is ",
        std::string(Name(*yaml.distributed_type)), ", not DEEPSPEED"));
  }
  const std::string json_path = DeepSpeedJsonPath(inputs, yaml);
  if (yaml.distributed_type == DistributedType::kDeepSpeed && !json_path.empty()) {
    std::string path = json_path;
    if (path[0] != '/' && inputs.deepspeed_config.empty()) {
      const std::string beside = JoinPath(DirName(inputs.accelerate_config), path);
      if (env->FileExists(beside)) path = beside;
    }
    auto text = ReadFileToString(env, path);
    if (!text.ok()) {
      return absl::Status(text.status().code(),
                          absl::StrCat(inputs.accelerate_config,
                                       ": deepspeed_config_file: cannot read ", path, ": ",
                                       std::string(text.status().message())));
    }
    ACCEL_ASSIGN_OR_RETURN(json_doc, ParseJsonDocument(*text, path, inputs.echo));
  }
  return ResolveDocuments(yaml_doc, json_doc ? &*json_doc : nullptr, inputs);
}

}  // namespace accel::config
