// DeepSpeed: plugin mode (deepspeed_config in the YAML) and JSON mode (deepspeed_config_file),
// with every "auto" filled from the source Accelerate uses.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/config/resolve_internal.h"
#include "engine/config/batch_bounds.h"

namespace accel::config::internal {
namespace {

KeyPath Ds(const char* key) { return {"deepspeed_config", key}; }
KeyPath Z(const char* key) { return {"zero_optimization", key}; }
KeyPath Z(const char* section, const char* key) { return {"zero_optimization", section, key}; }

std::string Show(int64_t v) { return std::to_string(v); }
std::string Show(double v) { return absl::StrCat(v); }
std::string Show(bool v) { return v ? "true" : "false"; }
std::string Show(OffloadDevice v) { return std::string(Name(v)); }
std::string Show(const std::string& v) { return v; }

// JSON mode: the JSON's value wins (as in Accelerate); "auto" takes the environment variable,
// else `fallback`; an absent key is `absent`. An environment value the JSON overrides is
// reported, since Accelerate drops it without a word.
template <typename T>
T FromJson(Context& c, const std::string& source, const KeyPath& path, const Autoable<T>& value,
           const std::optional<T>& env_value, const char* var, T fallback, T absent) {
  if (value.has_value()) {
    if (env_value.has_value() && !(*env_value == value.value)) {
      c.diag->Warn("environment", var,
                   absl::StrCat("ignored: ", source, " sets ", PathString(path), " to ",
                                Show(value.value), " (the file wins)"));
    }
    return value.value;
  }
  if (value.is_auto()) return env_value.value_or(fallback);
  return absent;
}

std::optional<OffloadDevice> EnvDevice(Context& c, const char* var) {
  return c.env.Enum({var}, OffloadDeviceNames());
}

std::optional<int64_t> EnvInt(Context& c, const char* var, int64_t min, int64_t max) {
  return c.env.Int({var}, min, max);
}

// Accelerate compares this one variable with == "true" only.
std::optional<bool> EnvSave16(Context& c) {
  const auto* v = c.env.Find({"ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL"});
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>() == "true";
}

// With a JSON file, the YAML may not set what the JSON controls (Accelerate raises "When using
// deepspeed_config_file, the following accelerate config variables will be ignored").
void CheckYamlConflicts(Context& c, const std::string& json_source) {
  static const char* kKeys[] = {"gradient_accumulation_steps", "gradient_clipping", "zero_stage",
                                "offload_optimizer_device",    "offload_param_device",
                                "offload_param_nvme_path",     "offload_optimizer_nvme_path",
                                "zero3_save_16bit_model"};
  for (const char* key : kKeys) {
    if (c.yaml.deepspeed.keys.count(key) == 0) continue;
    c.YamlError(Ds(key), absl::StrCat("also controlled by the DeepSpeed config file ", json_source,
                                      "; set it there only (Accelerate: \"When using "
                                      "deepspeed_config_file, the following accelerate config "
                                      "variables will be ignored\")"));
  }
  if (c.yaml.mixed_precision_given) {
    c.YamlError({"mixed_precision"},
                absl::StrCat("cannot be set in the YAML together with the DeepSpeed config file ",
                             json_source, "; set fp16/bf16 there (or \"auto\" with "
                             "--mixed-precision / ACCELERATE_MIXED_PRECISION)"));
  }
}

void ResolveJsonPrecision(Context& c, const DeepSpeedJson& json) {
  TrainPlan& p = c.plan;
  const PrecisionMode requested = RequestedPrecision(c, /*include_yaml=*/false);
  const bool want16 = requested == PrecisionMode::kFp16;
  const bool wantbf = requested == PrecisionMode::kBf16;
  // A missing section is added by Accelerate from mixed_precision, like "auto".
  const bool fp16 = json.fp16.enabled.has_value() ? json.fp16.enabled.value : want16;
  const bool bf16 = json.bf16.enabled.has_value() ? json.bf16.enabled.value : wantbf;
  if ((wantbf && json.fp16.enabled.has_value() && json.fp16.enabled.value) ||
      (want16 && json.bf16.enabled.has_value() && json.bf16.enabled.value)) {
    c.diag->Error(json.source, wantbf ? "fp16.enabled" : "bf16.enabled",
                  absl::StrCat("`--mixed_precision` arg cannot be set to `",
                               std::string(Name(requested)), "` when `", wantbf ? "fp16" : "bf16",
                               "` is set in the DeepSpeed config file."));
    return;
  }
  if (fp16 && bf16) {
    c.diag->Error(json.source, "fp16.enabled", "fp16 and bf16 cannot both be enabled");
    return;
  }
  if (requested != PrecisionMode::kNo && !fp16 && !bf16) {
    c.diag->Warn(json.source, want16 ? "fp16.enabled" : "bf16.enabled",
                 absl::StrCat("false in the file wins over the requested mixed precision ",
                              std::string(Name(requested))));
  }
  p.mixed_precision.mode = fp16 ? PrecisionMode::kFp16
                                : (bf16 ? PrecisionMode::kBf16 : PrecisionMode::kNo);
}

void ResolveDsDtypes(Context& c, const DeepSpeedJson* json) {
  // DeepSpeed always keeps fp32 master weights and optimizer state.
  MixedPrecisionPlan& mp = c.plan.mixed_precision;
  FloatType low = FloatType::kFp32;
  if (mp.mode == PrecisionMode::kFp16) low = FloatType::kFp16;
  if (mp.mode == PrecisionMode::kBf16) low = FloatType::kBf16;
  mp.param_dtype = low;
  mp.reduce_dtype = (json && json->communication_data_type) ? *json->communication_data_type : low;
  mp.master_dtype = mp.optimizer_dtype = FloatType::kFp32;
  c.plan.comm.communication_dtype = json ? json->communication_data_type : std::nullopt;
  if (mp.mode != PrecisionMode::kFp16) return;
  LossScalingPlan ls;  // DeepSpeed's defaults: 2^16, window 1000, hysteresis 2, min 1
  if (json != nullptr) {
    const DsFp16& f = json->fp16;
    if (f.loss_scale.value_or(0) > 0) {
      c.diag->Error(json->source, "fp16.loss_scale",
                    "a static loss scale is not supported by this engine; use 0 (dynamic)");
    }
    ls.initial_scale_power = static_cast<int>(f.initial_scale_power.value_or(16));
    ls.loss_scale_window = f.loss_scale_window.value_or(1000);
    ls.hysteresis = static_cast<int>(f.hysteresis.value_or(2));
    ls.min_loss_scale = f.min_loss_scale.value_or(1);
    if (ls.min_loss_scale <= 0) {
      c.diag->Error(json->source, "fp16.min_loss_scale",
                    "must be above 0 with dynamic loss scaling");
    }
  }
  c.plan.loss_scaling = ls;
}

// Buckets that "auto" sizes from the model's hidden size h (Accelerate: h², 0.9·h², 10·h).
std::optional<int64_t> HiddenSized(Context& c, const std::string& source, const char* key,
                                   const Autoable<int64_t>& v, double factor, int power,
                                   int64_t absent) {
  if (v.has_value()) return v.value;
  if (!v.is_auto()) return absent;
  if (!c.job().hidden_size.has_value()) {
    c.MissingJobValue(source, absl::StrCat("zero_optimization.", key), "the model's hidden size");
    return std::nullopt;
  }
  const double h = static_cast<double>(*c.job().hidden_size);
  return static_cast<int64_t>(std::floor(factor * std::pow(h, power)));
}

void ResolveZeroTuning(Context& c, const DeepSpeedJson* json) {
  TrainPlan& p = c.plan;
  const bool stage3 = p.strategy == Strategy::kFullShard;
  p.comm = CommPlan{};
  p.comm.overlap_comm = stage3;
  std::optional<int64_t> prefetch = 50000000, persistence = 100000;
  int64_t live = 1000000000, reuse = 1000000000;
  if (json != nullptr) {
    const DsZero& z = json->zero;
    const std::string& s = json->source;
    p.comm.reduce_bucket_size =
        HiddenSized(c, s, "reduce_bucket_size", z.reduce_bucket_size, 1.0, 2, 500000000);
    prefetch = HiddenSized(c, s, "stage3_prefetch_bucket_size", z.stage3_prefetch_bucket_size,
                           0.9, 2, 50000000);
    persistence = HiddenSized(c, s, "stage3_param_persistence_threshold",
                              z.stage3_param_persistence_threshold, 10.0, 1, 100000);
    live = z.stage3_max_live_parameters.value_or(live);
    reuse = z.stage3_max_reuse_distance.value_or(reuse);
    p.comm.allgather_bucket_size = z.allgather_bucket_size.value_or(500000000);
    p.comm.overlap_comm = z.overlap_comm.value_or(stage3);
    p.comm.contiguous_gradients = z.contiguous_gradients.value_or(true);
    p.comm.sub_group_size = z.sub_group_size.value_or(1000000000);
    OffloadTuning& t = p.offload_tuning;
    t.pin_memory = z.offload_param.pin_memory.value_or(
        z.offload_optimizer.pin_memory.value_or(true));
    t.param_buffer_count = static_cast<int>(z.offload_param.buffer_count.value_or(5));
    t.param_buffer_size = z.offload_param.buffer_size.value_or(100000000);
    t.max_in_cpu = z.offload_param.max_in_cpu.value_or(1000000000);
    t.optimizer_buffer_count = static_cast<int>(z.offload_optimizer.buffer_count.value_or(4));
    t.aio_block_size = json->aio.block_size.value_or(1048576);
    t.aio_queue_depth = static_cast<int>(json->aio.queue_depth.value_or(8));
    t.aio_intra_op_parallelism = static_cast<int>(json->aio.intra_op_parallelism.value_or(1));
    t.aio_single_submit = json->aio.single_submit.value_or(false);
    t.aio_overlap_events = json->aio.overlap_events.value_or(true);
  }
  if (stage3) {
    p.prefetch = PrefetchPlan{prefetch, persistence, live, reuse};
    // DeepSpeed prefetches ahead in both passes unless the bucket is 0.
    const bool on = !prefetch.has_value() || *prefetch > 0;
    p.forward_prefetch = on;
    p.backward_prefetch = on ? BackwardPrefetch::kBackwardPre : BackwardPrefetch::kNone;
  } else {
    p.prefetch = PrefetchPlan{};
    p.forward_prefetch = false;
    p.backward_prefetch = BackwardPrefetch::kNone;
  }
}

void CheckOffload(Context& c, const DeepSpeedJson* json, int stage) {
  TrainPlan& p = c.plan;
  auto error = [&](const char* yaml_key, const KeyPath& json_path, std::string_view message) {
    if (json != nullptr) {
      c.diag->Error(json->source, PathString(json_path), message);
    } else {
      c.YamlError(Ds(yaml_key), message);
    }
  };
  if (p.offload_params != OffloadDevice::kNone && stage != 3) {
    error("offload_param_device", Z("offload_param", "device"),
          absl::StrCat("parameter offload needs ZeRO stage 3 (parameters are not sharded at "
                       "stage ", stage, ")"));
  }
  if (p.offload_optimizer != OffloadDevice::kNone && stage == 0) {
    error("offload_optimizer_device", Z("offload_optimizer", "device"),
          "optimizer offload needs ZeRO stage 1 or higher");
  }
  auto check_path = [&](OffloadDevice device, std::string* path, const char* yaml_key,
                        const char* section) {
    if (device != OffloadDevice::kNvme) {
      path->clear();
      return;
    }
    if (path->empty() || *path == "none") {
      error(yaml_key, Z(section, "nvme_path"),
            "nvme offload needs a directory (nvme_path is not set)");
    }
  };
  check_path(p.offload_params, &p.offload_param_nvme_path, "offload_param_nvme_path",
             "offload_param");
  check_path(p.offload_optimizer, &p.offload_optimizer_nvme_path, "offload_optimizer_nvme_path",
             "offload_optimizer");
}

}  // namespace

void ResolveDeepSpeed(Context& c, const DeepSpeedJson* json) {
  const DeepSpeedSection& y = c.yaml.deepspeed;
  TrainPlan& p = c.plan;
  const JobSettings& job = c.job();
  int stage = 2;
  if (json != nullptr) {
    const std::string& src = json->source;
    CheckYamlConflicts(c, src);
    if (!json->zero.present) {
      c.diag->Error(src, "zero_optimization",
                    "missing: Please specify the ZeRO optimization config in the DeepSpeed "
                    "config.");
    }
    const DsZero& z = json->zero;
    stage = static_cast<int>(FromJson<int64_t>(
        c, src, Z("stage"), z.stage, EnvInt(c, "ACCELERATE_DEEPSPEED_ZERO_STAGE", 0, 3),
        "ACCELERATE_DEEPSPEED_ZERO_STAGE", 2, 0));
    p.offload_optimizer = FromJson(
        c, src, Z("offload_optimizer", "device"), z.offload_optimizer.device,
        EnvDevice(c, "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE"),
        "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", OffloadDevice::kNone, OffloadDevice::kNone);
    p.offload_params = FromJson(
        c, src, Z("offload_param", "device"), z.offload_param.device,
        EnvDevice(c, "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE"),
        "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", OffloadDevice::kNone, OffloadDevice::kNone);
    p.offload_optimizer_nvme_path = FromJson<std::string>(
        c, src, Z("offload_optimizer", "nvme_path"), z.offload_optimizer.nvme_path,
        c.env.String({"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH"}),
        "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH", "none", "");
    p.offload_param_nvme_path = FromJson<std::string>(
        c, src, Z("offload_param", "nvme_path"), z.offload_param.nvme_path,
        c.env.String({"ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_NVME_PATH"}),
        "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_NVME_PATH", "none", "");
    p.save_16bit_model = FromJson<bool>(
        c, src, Z("stage3_gather_16bit_weights_on_model_save"),
        z.stage3_gather_16bit_weights_on_model_save, EnvSave16(c),
        "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", false, false);
    // Accelerate sets a missing gradient_accumulation_steps to 1; "auto" comes from the
    // plugin (environment) or the job (the Accelerator's argument).
    const auto env_ga = EnvInt(c, "ACCELERATE_GRADIENT_ACCUMULATION_STEPS", 1, kMaxGradAccum);
    p.gradient_accumulation_steps = FromJson<int64_t>(
        c, src, {"gradient_accumulation_steps"}, json->gradient_accumulation_steps, env_ga,
        "ACCELERATE_GRADIENT_ACCUMULATION_STEPS",
        job.gradient_accumulation_steps.value_or(1), 1);
    const auto env_clip = c.env.Number({"ACCELERATE_GRADIENT_CLIPPING"}, 0.0);
    p.gradient_clipping = FromJson<double>(c, src, {"gradient_clipping"}, json->gradient_clipping,
                                           env_clip, "ACCELERATE_GRADIENT_CLIPPING",
                                           job.gradient_clipping.value_or(1.0), 1.0);
    ResolveJsonPrecision(c, *json);
  } else {
    stage = y.zero_stage.value_or(static_cast<int>(
        EnvInt(c, "ACCELERATE_DEEPSPEED_ZERO_STAGE", 0, 3).value_or(2)));
    p.offload_optimizer = y.offload_optimizer_device
                              ? *y.offload_optimizer_device
                              : EnvDevice(c, "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE")
                                    .value_or(OffloadDevice::kNone);
    p.offload_params = y.offload_param_device
                           ? *y.offload_param_device
                           : EnvDevice(c, "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE")
                                 .value_or(OffloadDevice::kNone);
    p.offload_optimizer_nvme_path = y.offload_optimizer_nvme_path.value_or(
        c.env.String({"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH"}).value_or("none"));
    p.offload_param_nvme_path = y.offload_param_nvme_path.value_or(
        c.env.String({"ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_NVME_PATH"}).value_or("none"));
    p.save_16bit_model = y.zero3_save_16bit_model.value_or(EnvSave16(c).value_or(false));
    auto ga = y.gradient_accumulation_steps;
    if (!ga) ga = EnvInt(c, "ACCELERATE_GRADIENT_ACCUMULATION_STEPS", 1, kMaxGradAccum);
    p.gradient_accumulation_steps = ga.value_or(job.gradient_accumulation_steps.value_or(1));
    auto clip = y.gradient_clipping;
    if (!clip) clip = c.env.Number({"ACCELERATE_GRADIENT_CLIPPING"}, 0.0);
    p.gradient_clipping = clip.value_or(job.gradient_clipping.value_or(1.0));
    p.mixed_precision.mode = RequestedPrecision(c, /*include_yaml=*/true);
  }
  if (job.gradient_accumulation_steps &&
      *job.gradient_accumulation_steps != p.gradient_accumulation_steps) {
    c.diag->Warn("job", "gradient_accumulation_steps",
                 absl::StrCat("Gradient accumulation steps mismatch: the job has ",
                              *job.gradient_accumulation_steps, ", DeepSpeed config has ",
                              p.gradient_accumulation_steps, ". Using DeepSpeed's value."));
  }

  static const Strategy kByStage[] = {Strategy::kNoShard, Strategy::kShardOptimizer,
                                      Strategy::kShardGradOp, Strategy::kFullShard};
  p.strategy = kByStage[std::clamp(stage, 0, 3)];
  p.reshard_after_forward = stage == 3;
  CheckOffload(c, json, stage);

  // zero3_init_flag: YAML > environment > true exactly at stage 3.
  std::optional<bool> init = y.zero3_init_flag;
  if (!init) init = c.env.Bool({"ACCELERATE_DEEPSPEED_ZERO3_INIT"});
  if (init.value_or(false) && stage != 3) {
    c.YamlWarn(Ds("zero3_init_flag"), "DeepSpeed Zero3 Init flag is only applicable for ZeRO "
                                      "Stage 3. Setting it to False.");
  }
  p.zero3_init = init.value_or(stage == 3) && stage == 3;
  p.cpu_ram_efficient_loading = p.zero3_init;
  p.sync_module_states = true;  // DeepSpeed broadcasts rank 0's weights at initialize
  p.use_orig_params = true;
  // DeepSpeed hides wrapping: one unit per transformer block.
  p.wrap_policy = WrapPolicy::kTransformerBased;
  p.transformer_layer_cls_to_wrap.clear();
  p.min_num_params = 0;
  p.state_dict_type = StateDictType::kSharded;
  p.activation_checkpointing = json != nullptr && json->activation_checkpointing.present;

  ResolveDsDtypes(c, json);
  ResolveZeroTuning(c, json);
  BatchKeys keys;
  if (json != nullptr) {
    keys = BatchKeys{json->train_micro_batch_size_per_gpu, json->train_batch_size, json->source};
    ResolveOptimizer(c, *json);
  } else {
    keys.micro = keys.total = Autoable<int64_t>::Auto();  // what plugin mode synthesises
    keys.source = "job";
  }
  ResolveBatch(c, keys);
}

}  // namespace accel::config::internal
