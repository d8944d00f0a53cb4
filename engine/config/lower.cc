#include "engine/config/lower.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/base/path_checks.h"
#include "engine/base/status_macros.h"
#include "engine/config/accelerate_yaml.h"
#include "engine/config/dataset_lowering.h"
#include "engine/config/sample_lowering.h"
#include "engine/config/document.h"
#include "engine/config/resolve.h"
#include "engine/io/block_file.h"
#include "engine/model/architecture.h"
#include "engine/model/checkpoint_kind.h"
#include "engine/model/param_specs.h"
#include "engine/model/registry.h"
#include "engine/shard/shard_plan.h"

namespace accel::config {
namespace {

absl::StatusOr<Document> ReadDocument(const ConfigFile& file, bool json, Env* env) {
  std::string text = file.text;
  if (text.empty()) {
    ACCEL_ASSIGN_OR_RETURN(text, ReadFileToString(env, file.name));
  }
  return json ? ParseJsonDocument(text, file.name, file.echo)
              : ParseYamlDocument(text, file.name, file.echo);
}

// A JSON beside a YAML whose distributed_type is not DEEPSPEED would be ignored by Accelerate's
// launcher for FSDP and DDP; here it is a mistake worth naming.
absl::Status CheckJsonNeedsDeepSpeed(const Document& yaml, const LoweringInputs& in) {
  Diagnostics peek;
  const AccelerateConfig accelerate = ReadAccelerateConfig(yaml, &peek);
  if (!accelerate.distributed_type.has_value() ||
      *accelerate.distributed_type == DistributedType::kDeepSpeed) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      in.accelerate.name, ": distributed_type: a DeepSpeed config (", in.deepspeed.name,
      ") was given, but distributed_type is ",
      std::string(Name(*accelerate.distributed_type)), ", not DEEPSPEED"));
}

// The job's values for "auto"; the hidden size from `model` (null: it could not be read).
JobSettings JobSettingsWithModel(const TrainOptions& o, const model::ModelConfig* model) {
  JobSettings j;
  j.micro_batch_size = o.batch;
  j.gradient_accumulation_steps = o.grad_accum;
  j.gradient_clipping = o.grad_clip;
  j.lr = o.schedule.base_lr;
  j.weight_decay = o.adamw.weight_decay;
  j.betas = std::array<double, 2>{o.adamw.beta1, o.adamw.beta2};
  j.eps = o.adamw.eps;
  j.warmup_steps = o.schedule.warmup_steps;
  j.steps = o.steps;
  if (model != nullptr) j.hidden_size = model->hidden_size();
  return j;
}

absl::StatusOr<TrainPlan> Resolve(const LoweringInputs& in, const model::ModelConfig* model,
                                  Env* env) {
  ConfigInputs ci;
  ci.accelerate_config = in.accelerate.name;
  ci.deepspeed_config = in.deepspeed.name;
  ci.env = in.env;
  ci.job = JobSettingsWithModel(in.job, model);
  // Accumulation and clipping count as the job's only when chosen: otherwise a DeepSpeed file's
  // own value would be reported as overriding a default nobody chose.
  if (!in.accumulation_given) ci.job.gradient_accumulation_steps.reset();
  if (!in.clipping_given) ci.job.gradient_clipping.reset();
  ci.job.load_dtype = in.load_dtype;
  ci.job.stand_in = in.job_stand_in;
  ci.mixed_precision = in.mixed_precision;
  ci.defaults = in.defaults;
  ci.job_complete = true;
  ci.num_processes = in.launcher_world;
  ci.num_processes_source = in.launcher_world_source;
  ci.num_machines = in.launcher_machines;
  ci.num_machines_source = in.launcher_machines_source;
  // A YAML named but not read: the resolver opens it, and the JSON it names beside it.
  if (in.accelerate.given() && in.accelerate.text.empty()) {
    ci.echo = in.accelerate.echo;
    return ResolvePlan(ci, env);
  }
  std::optional<Document> json;
  if (in.deepspeed.given()) {
    ACCEL_ASSIGN_OR_RETURN(json, ReadDocument(in.deepspeed, true, env));
  }
  Document yaml;
  if (in.accelerate.given()) {
    ACCEL_ASSIGN_OR_RETURN(yaml, ReadDocument(in.accelerate, false, env));
    if (json) ACCEL_RETURN_IF_ERROR(CheckJsonNeedsDeepSpeed(yaml, in));
  } else {
    ACCEL_ASSIGN_OR_RETURN(yaml, ImpliedDeepSpeedYaml(in.launcher_world.value_or(1)));
  }
  return ResolveDocuments(yaml, json ? &*json : nullptr, ci);
}

// ApplyTrainPlan names keys; this adds the file each line's key lives in: FSDP and Accelerate
// keys in the YAML, DeepSpeed's in the JSON when there is one (else the YAML's
// deepspeed_config section, where the plugin mode keeps them).
absl::Status NameFiles(const LoweringInputs& in, const absl::Status& s) {
  if (s.ok()) return s;
  std::vector<std::string> lines = absl::StrSplit(s.message(), '\n');
  for (std::string& line : lines) {
    const bool yaml_key = absl::StartsWith(line, "fsdp_config.") ||
                          absl::StartsWith(line, "num_processes") ||
                          absl::StartsWith(line, "distributed_type");
    const std::string& file =
        in.deepspeed.given() && !yaml_key ? in.deepspeed.name : in.accelerate.name;
    if (!file.empty()) line = absl::StrCat(file, ": ", line);
  }
  return absl::Status(s.code(), absl::StrJoin(lines, "\n"));
}

// The key that set an NVMe directory (the optimizer's, or with `params` the parameters'), with
// its file, in the user's vocabulary.
std::string OffloadDirKey(const LoweringInputs& in, const LoweredJob& job, bool params) {
  if (!job.plan.has_value()) return params ? "offload_param_dir" : "offload_dir";
  const std::string& file = in.deepspeed.given() ? in.deepspeed.name : in.accelerate.name;
  return absl::StrCat(file, ": zero_optimization.",
                      params ? "offload_param" : "offload_optimizer", ".nvme_path");
}

// What the engine itself would refuse when a rank starts: the loop's values, the model, the
// shard plan over the real world (rank 0's; every rank's has the same validity), the files.
absl::Status CheckEngine(const LoweringInputs& in, const LoweredJob& job) {
  const TrainOptions& o = job.options;
  ACCEL_RETURN_IF_ERROR(ValidateTrainOptions(o));
  if (o.seq > job.model.max_positions()) {
    return absl::InvalidArgumentError(
        absl::StrCat("seq_len: ", o.seq, " is longer than the model's context (",
                     job.model.architecture().positions_key, " ", job.model.max_positions(), " in ",
                     o.model_config.empty() ? o.model : o.model_config, ")"));
  }
  // The micro-batch's activations must be countable (issue 28); whether they fit the machine is
  // the rank's memory plan's to say, where the machine is known.
  absl::StatusOr<int64_t> activations = model::PlannedActivationBytes(
      job.model, o.batch, o.seq, {.checkpoint_blocks = o.activation_checkpointing});
  if (!activations.ok()) return Annotate(activations.status(), "train.micro_batch");
  ACCEL_ASSIGN_OR_RETURN(model::ModelLayout layout, model::ModelLayout::Create(job.model));
  absl::StatusOr<shard::ShardPlan> plan = shard::ShardPlan::Create(layout, job.world_size, 0,
                                                                   o.shard);
  if (!plan.ok()) {
    return Annotate(plan.status(), job.plan ? job.source : std::string("sharding"));
  }
  for (const bool params : {false, true}) {
    const std::string& dir = params ? o.shard.offload_param_dir : o.shard.offload_dir;
    if (!in.check_files || dir.empty()) continue;
    ACCEL_RETURN_IF_ERROR(Annotate(CheckWritableDirectory(dir), OffloadDirKey(in, job, params)));
    // Files on tmpfs are memory: offload there would lower nothing.
    ACCEL_RETURN_IF_ERROR(Annotate(io::CheckNotMemoryBacked(dir), OffloadDirKey(in, job, params)));
  }
  return absl::OkStatus();
}

// Whether `cls` is shaped like a transformer layer's class (Qwen3_5DecoderLayer, FooBlock):
// one the model does not have is a file written for another model.
bool LooksLikeLayerClass(const std::string& cls) {
  return absl::EndsWith(cls, "DecoderLayer") || absl::EndsWith(cls, "Layer") ||
         absl::EndsWith(cls, "Block");
}

// A decoder-layer class the model does not have (another architecture's, or one no registered
// family has), as Accelerate's transformer_auto_wrap_policy fails on a class it cannot find in
// the model. Other classes (norms, MLPs) exist in every model and run as one unit per block.
absl::Status CheckWrappedClasses(const TrainPlan& plan, const model::ModelConfig& model) {
  for (const std::string& cls : plan.transformer_layer_cls_to_wrap) {
    if ((model::IsBlockClass(cls) || LooksLikeLayerClass(cls)) && cls != "Block" &&
        cls != model.block_class()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fsdp_config.fsdp_transformer_layer_cls_to_wrap: ", cls, " is not a layer of model ",
          model.name(), " (", model.model_type(), ", whose blocks are ", model.block_class(),
          ")"));
    }
  }
  return absl::OkStatus();
}

// FSDP's rule, decided here and nowhere else: a hybrid plan spread over several machines shards
// within a machine and replicates across. A group the job, a flag or the config set stands (a
// config's own group was resolved with the launcher's machine count already); an unset one (0)
// becomes the ranks of one machine.
void GroupHybridByMachine(const LoweringInputs& in, LoweredJob* out) {
  shard::ShardOptions& s = out->options.shard;
  if (!shard::IsHybrid(s.strategy) || s.hybrid_group_size != 0) return;
  if (!in.launcher_machines.has_value() || *in.launcher_machines < 1) return;
  s.hybrid_group_size = std::max(1, out->world_size / *in.launcher_machines);
}

}  // namespace

JobSettings JobSettingsFromOptions(const TrainOptions& o, Env* env) {
  absl::StatusOr<model::ModelConfig> model = ModelConfigOf(env, o);
  return JobSettingsWithModel(o, model.ok() ? &*model : nullptr);
}

namespace {
std::atomic<int64_t> lowerings{0};
}  // namespace

int64_t LoweringsInProcess() { return lowerings.load(std::memory_order_relaxed); }

absl::StatusOr<LoweredJob> Lower(const LoweringInputs& in, Env* env) {
  lowerings.fetch_add(1, std::memory_order_relaxed);
  // Read once: neither the plan nor the command-line overrides name the model. An unreadable
  // model leaves "auto" buckets unfilled and is reported after the config's own problems.
  absl::StatusOr<model::ModelConfig> model = ModelConfigOf(env, in.job);
  LoweredJob out;
  out.options = in.job;
  out.world_size = in.launcher_world.value_or(1);
  if (in.accelerate.given() || in.deepspeed.given()) {
    ACCEL_ASSIGN_OR_RETURN(TrainPlan plan, Resolve(in, model.ok() ? &*model : nullptr, env));
    out.source = in.accelerate.given() && in.deepspeed.given()
                     ? absl::StrCat(in.accelerate.name, " + ", in.deepspeed.name)
                     : (in.accelerate.given() ? in.accelerate.name : in.deepspeed.name);
    out.notes = plan.warnings;
    out.world_size = plan.num_processes;
    ACCEL_RETURN_IF_ERROR(NameFiles(in, ApplyTrainPlan(plan, &out.options, &out.notes)));
    out.plan = std::move(plan);
  }
  if (in.job_wins) {
    const std::vector<std::string> kept = in.job_wins(out.options, in.job);
    if (!kept.empty() && out.plan) {
      out.notes.push_back(absl::StrCat("command line wins over the config for ",
                                       absl::StrJoin(kept, ", ")));
    }
  }
  GroupHybridByMachine(in, &out);
  if (!model.ok()) {
    // The readers name the config.json already (LoadModelConfig); the preset's have no file.
    const std::string& file = out.options.model_config;
    if (!file.empty() && absl::StrContains(model.status().message(), file)) {
      return model.status();
    }
    return Annotate(model.status(), file.empty() ? "model" : file);
  }
  out.model = *std::move(model);
  // What the model's config.json warned about (an architectures class we do not know), with
  // the config's warnings.
  if (!out.options.model_config.empty() && !out.options.resolved_model.has_value()) {
    for (std::string& note : model::CheckpointKindNotes(env, out.options.model_config)) {
      out.notes.push_back(std::move(note));
    }
  }
  // Text, JSONL or chat data: the prepared train.bin the ranks open (dataset_lowering.h). It
  // reads the sources, so only where they can be read (not for another host's files).
  if (in.check_files) ACCEL_RETURN_IF_ERROR(LowerDataset(&out.options, out.model, env));
  // Samples during training: the tokenizer their text comes from (sample_lowering.h).
  ACCEL_RETURN_IF_ERROR(LowerSample(&out.options, out.model, env));
  if (out.plan && in.model_given) {
    ACCEL_RETURN_IF_ERROR(NameFiles(in, CheckWrappedClasses(*out.plan, out.model)));
  }
  ACCEL_RETURN_IF_ERROR(CheckEngine(in, out));
  return out;
}

}  // namespace accel::config
