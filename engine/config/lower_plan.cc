#include "worker/plan_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/model/gpt2_config.h"
#include "nlohmann/json.hpp"

namespace accel::worker {
namespace {

using config::DistributedType;

shard::Strategy ToStrategy(config::Strategy s) {
  switch (s) {
    case config::Strategy::kNoShard: return shard::Strategy::kNoShard;
    case config::Strategy::kZero1: return shard::Strategy::kShardOptimizer;
    case config::Strategy::kShardGradOp: return shard::Strategy::kShardGradOp;
    case config::Strategy::kFullShard: return shard::Strategy::kFullShard;
    case config::Strategy::kHybridShard: return shard::Strategy::kHybridShard;
    case config::Strategy::kHybridShardZero2: return shard::Strategy::kHybridShardZero2;
  }
  return shard::Strategy::kNoShard;
}

shard::BackwardPrefetch ToPrefetch(config::BackwardPrefetch p) {
  switch (p) {
    case config::BackwardPrefetch::kNone: return shard::BackwardPrefetch::kNone;
    case config::BackwardPrefetch::kBackwardPre: return shard::BackwardPrefetch::kBackwardPre;
    case config::BackwardPrefetch::kBackwardPost: return shard::BackwardPrefetch::kBackwardPost;
  }
  return shard::BackwardPrefetch::kNone;
}

bool IsHybrid(shard::Strategy s) {
  return s == shard::Strategy::kHybridShard || s == shard::Strategy::kHybridShardZero2;
}

// Names a setting in the vocabulary the user wrote it in.
const char* Key(const config::TrainPlan& p, const char* fsdp, const char* deepspeed,
                const char* other) {
  switch (p.distributed_type) {
    case DistributedType::kFsdp: return fsdp;
    case DistributedType::kDeepSpeed: return deepspeed;
    default: return other;
  }
}

// The DeepSpeed "optimizer" section (absent: the job's AdamW settings stay).
void ApplyOptimizer(const config::OptimizerPlan& opt, train::TrainOptions& o,
                    std::vector<std::string>& errors) {
  if (opt.type == "SGD") {
    errors.push_back("optimizer.type: SGD is not supported by this engine (it trains with "
                     "AdamW; use \"AdamW\")");
    return;
  }
  if (opt.lr) o.schedule.base_lr = static_cast<float>(*opt.lr);
  if (opt.weight_decay) o.adamw.weight_decay = static_cast<float>(*opt.weight_decay);
  if (opt.betas) {
    o.adamw.beta1 = static_cast<float>((*opt.betas)[0]);
    o.adamw.beta2 = static_cast<float>((*opt.betas)[1]);
  }
  if (opt.eps) o.adamw.eps = static_cast<float>(*opt.eps);
  // Adam with adam_w_mode false adds weight decay to the gradient (L2); with no decay it is the
  // same update as AdamW.
  if (!opt.adam_w_mode && o.adamw.weight_decay > 0) {
    errors.push_back(absl::StrCat(
        "optimizer.params.adam_w_mode: Adam with L2 weight decay (adam_w_mode false, "
        "weight_decay ", o.adamw.weight_decay,
        ") is not supported by this engine; use AdamW (decoupled weight decay)"));
  }
}

// The DeepSpeed "scheduler" section onto DeepSpeed's own formulas (optim::DeepSpeedLr): warmup
// of warmup_type, then constant, linear decay or cosine, over total_num_steps. "auto" values are
// resolved already (warmup_max_lr = the optimizer lr, warmup_num_steps = the job's warmup,
// total_num_steps = the job's steps); an unset warmup_num_steps keeps the job's warmup.
void ApplyScheduler(const config::SchedulerPlan& s, train::TrainOptions& o,
                    std::vector<std::string>& errors, std::vector<std::string>& notes) {
  using Type = optim::DeepSpeedLr::Type;
  optim::DeepSpeedLr d;
  d.type = s.type == "WarmupDecayLR"    ? Type::kWarmupDecayLR
           : s.type == "WarmupCosineLR" ? Type::kWarmupCosineLR
                                        : Type::kWarmupLR;
  d.log_warmup = s.warmup_type != "linear";
  d.warmup_steps = s.warmup_num_steps.value_or(o.schedule.warmup_steps);
  d.total_steps = s.total_num_steps.value_or(o.steps);
  d.warmup_min_ratio = s.warmup_min_ratio;
  d.cos_min_ratio = s.cos_min_ratio;
  if (d.type == Type::kWarmupCosineLR) {
    o.schedule.kind = optim::ScheduleKind::kCosine;  // relative to the optimizer lr (base_lr)
    o.schedule.min_lr = static_cast<float>(o.schedule.base_lr * d.cos_min_ratio);
  } else {
    d.max_lr = s.warmup_max_lr.value_or(o.schedule.base_lr);
    d.min_lr = s.warmup_min_lr.value_or(0.0);
    o.schedule.base_lr = static_cast<float>(d.max_lr);
    o.schedule.min_lr = static_cast<float>(d.min_lr);
    o.schedule.kind = d.type == Type::kWarmupLR ? optim::ScheduleKind::kConstant
                                                : optim::ScheduleKind::kLinear;
  }
  if (d.type != Type::kWarmupLR && d.total_steps < 1) {
    errors.push_back(absl::StrCat("scheduler.params.total_num_steps: must be >= 1, got ",
                                  d.total_steps));
  }
  if (d.type != Type::kWarmupLR && d.total_steps != o.steps) {
    notes.push_back(absl::StrCat("scheduler.params.total_num_steps: the schedule spans ",
                                 d.total_steps, " steps and the job runs ", o.steps,
                                 ", as DeepSpeed would"));
  }
  o.schedule.warmup_steps = d.warmup_steps;
  o.schedule.deepspeed = d;
}

}  // namespace

DType ToDType(config::FloatType t) {
  switch (t) {
    case config::FloatType::kFp32: return DType::kF32;
    case config::FloatType::kBf16: return DType::kBF16;
    case config::FloatType::kFp16: return DType::kF16;
  }
  return DType::kF32;
}

config::JobSettings JobSettingsFromOptions(const train::TrainOptions& o, Env* env) {
  config::JobSettings j;
  j.micro_batch_size = o.batch;
  j.gradient_accumulation_steps = o.grad_accum;
  j.gradient_clipping = o.grad_clip;
  j.lr = o.schedule.base_lr;
  j.weight_decay = o.adamw.weight_decay;
  j.betas = std::array<double, 2>{o.adamw.beta1, o.adamw.beta2};
  j.eps = o.adamw.eps;
  j.warmup_steps = o.schedule.warmup_steps;
  j.steps = o.steps;
  absl::StatusOr<model::Gpt2Config> model = o.model_config.empty()
                                                ? model::Gpt2Preset(o.model)
                                                : model::LoadGpt2Config(env, o.model_config);
  if (model.ok()) j.hidden_size = model->n_embd;
  return j;
}

absl::Status CheckPlanWorld(const config::TrainPlan& plan, int world_size,
                            std::string_view world_source) {
  if (plan.num_processes == world_size) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "num_processes: the config is for ", plan.num_processes, " process",
      plan.num_processes == 1 ? "" : "es", " but the world size is ", world_size, " (",
      std::string(world_source), ")"));
}

absl::Status ApplyTrainPlan(const config::TrainPlan& p, train::TrainOptions* options,
                            std::vector<std::string>* notes_out) {
  train::TrainOptions o = *options;
  std::vector<std::string> errors, notes;
  const bool ds = p.distributed_type == DistributedType::kDeepSpeed;

  // Sharding.
  o.shard.strategy = ToStrategy(p.strategy);
  o.shard.hybrid_group_size = IsHybrid(o.shard.strategy) ? p.shard_group_size : 0;
  o.shard.reshard_after_forward = p.reshard_after_forward;
  o.shard.forward_prefetch = p.forward_prefetch;
  o.shard.backward_prefetch = ToPrefetch(p.backward_prefetch);
  if (p.prefetch.bucket_size) o.shard.prefetch_bucket_numel = *p.prefetch.bucket_size;
  if (p.prefetch.param_persistence_threshold) {
    o.shard.param_persistence_threshold = *p.prefetch.param_persistence_threshold;
  }
  o.shard.max_live_numel = p.prefetch.max_live_parameters;
  o.shard.max_reuse_distance = p.prefetch.max_reuse_distance;
  // DeepSpeed reduces gradients during every backward from stage 2 up (partitioned gradients
  // accumulate in reduced form); stage 0/1, FSDP (Accelerate's no_sync) and DDP reduce at the
  // accumulation boundary.
  o.shard.reduce_every_micro_step =
      ds && (p.strategy == config::Strategy::kShardGradOp ||
             p.strategy == config::Strategy::kFullShard);

  // Precision.
  const config::MixedPrecisionPlan& mp = p.mixed_precision;
  // FSDP's low precision (weights loaded in bf16, no mixed precision): everything in bf16.
  const bool low_precision = mp.param_dtype == config::FloatType::kBf16 &&
                             mp.master_dtype == config::FloatType::kBf16 &&
                             mp.optimizer_dtype == config::FloatType::kBf16;
  if (!low_precision && (mp.master_dtype != config::FloatType::kFp32 ||
                         mp.optimizer_dtype != config::FloatType::kFp32)) {
    errors.push_back(absl::StrCat(
        "mixed_precision: master weights in ", std::string(config::Name(mp.master_dtype)),
        " and optimizer state in ", std::string(config::Name(mp.optimizer_dtype)),
        " are not supported by this engine (fp32, or bf16 throughout for low precision; fp16 "
        "weights need mixed_precision fp16)"));
  }
  o.shard.master_dtype = low_precision ? DType::kBF16 : DType::kF32;
  o.shard.param_dtype = ToDType(mp.param_dtype);
  o.shard.reduce_dtype = ToDType(mp.reduce_dtype);
  if (p.loss_scaling) {
    o.loss_scaling.initial_scale_power = p.loss_scaling->initial_scale_power;
    o.loss_scaling.window = p.loss_scaling->loss_scale_window;
    o.loss_scaling.hysteresis = p.loss_scaling->hysteresis;
    o.loss_scaling.min_scale = p.loss_scaling->min_loss_scale;
  }

  // Training loop.
  o.grad_accum = p.gradient_accumulation_steps;
  o.grad_clip = static_cast<float>(p.gradient_clipping);
  if (p.train_micro_batch_size_per_gpu) o.batch = *p.train_micro_batch_size_per_gpu;
  if (p.optimizer) ApplyOptimizer(*p.optimizer, o, errors);
  if (p.scheduler) ApplyScheduler(*p.scheduler, o, errors, notes);

  // Loading and saving.
  o.sync_module_states = p.sync_module_states;
  o.cpu_ram_efficient_loading = p.cpu_ram_efficient_loading;
  o.zero3_init = p.zero3_init;
  // The plan's save_16bit_model means "also write a gathered model file": DeepSpeed's 16-bit
  // weights, but for FSDP the FULL_STATE_DICT fp32 file, which kFull already writes.
  o.save_16bit = ds && p.save_16bit_model;
  switch (p.state_dict_type) {
    case config::StateDictType::kFull:
      o.state_dict_type = train::TrainOptions::StateDictType::kFull;
      break;
    case config::StateDictType::kSharded:
      o.state_dict_type = train::TrainOptions::StateDictType::kSharded;
      break;
    case config::StateDictType::kLocal:
      o.state_dict_type = train::TrainOptions::StateDictType::kSharded;
      notes.push_back("fsdp_config.fsdp_state_dict_type: LOCAL_STATE_DICT is saved as "
                      "SHARDED_STATE_DICT (one file per rank, also loadable at another world "
                      "size)");
      break;
  }

  // Offload (docs/sharding.md): the optimizer alone or the parameter shards with it, to host
  // memory (cpu) or to files (nvme, DeepSpeed's nvme_path); both go to the same place.
  using config::OffloadDevice;
  const char* offload_param_key =
      Key(p, "fsdp_config.fsdp_offload_params", "zero_optimization.offload_param.device",
          "offload_params");
  const char* offload_optimizer_key =
      Key(p, "fsdp_config.fsdp_offload_params", "zero_optimization.offload_optimizer.device",
          "offload_optimizer");
  if (p.offload_params != OffloadDevice::kNone) {
    if (p.offload_optimizer != p.offload_params) {
      errors.push_back(absl::StrCat(offload_param_key, ": ",
                                    std::string(config::Name(p.offload_params)),
                                    " parameter offload needs the optimizer offloaded to ",
                                    std::string(config::Name(p.offload_params)), " too (",
                                    offload_optimizer_key, ")"));
    } else if (o.shard.strategy != shard::Strategy::kFullShard &&
               o.shard.strategy != shard::Strategy::kHybridShard) {
      errors.push_back(absl::StrCat(
          offload_param_key, ": ", std::string(config::Name(p.offload_params)),
          " offload needs sharded parameters (FULL_SHARD / ZeRO stage 3, or HYBRID_SHARD), not ",
          std::string(shard::StrategyName(o.shard.strategy))));
    } else if (p.offload_params == OffloadDevice::kNvme &&
               p.offload_param_nvme_path != p.offload_optimizer_nvme_path) {
      errors.push_back(absl::StrCat(
          "zero_optimization.offload_param.nvme_path: ", p.offload_param_nvme_path,
          " differs from offload_optimizer.nvme_path ", p.offload_optimizer_nvme_path,
          "; this engine keeps both in one place"));
    } else {
      o.shard.offload_params = true;
    }
  }
  if (p.offload_optimizer != OffloadDevice::kNone) {
    o.shard.offload_optimizer = true;  // ZeRO-Offload
    if (p.offload_optimizer == OffloadDevice::kNvme) {
      if (p.offload_optimizer_nvme_path.empty()) {
        errors.push_back(absl::StrCat("zero_optimization.offload_optimizer.nvme_path: nvme "
                                      "offload needs a directory"));
      }
      o.shard.offload_dir = p.offload_optimizer_nvme_path;
    }
  }

  // What the engine does differently without changing the trained model.
  if (p.activation_checkpointing) {
    notes.push_back(absl::StrCat(
        Key(p, "fsdp_config.fsdp_activation_checkpointing", "activation_checkpointing",
            "activation_checkpointing"),
        ": ignored (activations are kept; the result is the same, memory is higher)"));
  }
  // Wrapping and use_orig_params are FSDP words; DeepSpeed plans always say "one unit per
  // block" and DDP has no units.
  const bool fsdp = p.distributed_type == DistributedType::kFsdp;
  bool block_units = p.wrap_policy == config::WrapPolicy::kTransformerBased;
  for (const std::string& cls : p.transformer_layer_cls_to_wrap) {
    // Hugging Face's class name and llm.c / nanoGPT's.
    if (cls != "GPT2Block" && cls != "Block") block_units = false;
  }
  if (fsdp && !block_units) {
    notes.push_back(absl::StrCat(
        "fsdp_config.fsdp_auto_wrap_policy: ", std::string(config::Name(p.wrap_policy)),
        p.transformer_layer_cls_to_wrap.empty()
            ? ""
            : absl::StrCat(" (", absl::StrJoin(p.transformer_layer_cls_to_wrap, ","), ")"),
        " runs as one unit per GPT2Block plus the root (the engine's only wrapping)"));
  }
  if (fsdp && !p.use_orig_params) {
    notes.push_back("fsdp_config.fsdp_use_orig_params: false has no effect (parameters are "
                    "always addressable by name)");
  }

  if (!errors.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  }
  *options = std::move(o);
  if (notes_out != nullptr) {
    notes_out->insert(notes_out->end(), notes.begin(), notes.end());
  }
  return absl::OkStatus();
}

ResolvedMode ModeOf(const train::TrainOptions& o) {
  ResolvedMode m;
  m.strategy = o.shard.strategy;
  m.params = o.shard.param_dtype;
  m.grads = o.shard.reduce_dtype;
  m.loss_scaling = o.shard.param_dtype == DType::kF16 || o.shard.reduce_dtype == DType::kF16;
  m.master = m.optimizer_state = o.shard.master_dtype;
  return m;
}

namespace {
std::string StateDictName(train::TrainOptions::StateDictType t) {
  return t == train::TrainOptions::StateDictType::kFull ? "full" : "sharded";
}
}  // namespace

namespace {
// " (offloaded to the host)", " (offloaded to files in DIR, with the parameters)", or "".
std::string OffloadNote(const shard::ShardOptions& s) {
  if (!s.offload_optimizer) return "";
  return absl::StrCat(" (offloaded to ",
                      s.offload_dir.empty() ? "the host" : "files in " + s.offload_dir,
                      s.offload_params ? ", with the parameters" : "", ")");
}
}  // namespace

std::string DescribeMode(const train::TrainOptions& o) {
  const ResolvedMode m = ModeOf(o);
  std::string group = IsHybrid(m.strategy)
                          ? absl::StrCat(" (hybrid group ", o.shard.hybrid_group_size, ")")
                          : "";
  return absl::StrFormat(
      "%s%s: params %s, grads %s, master %s, optimizer state %s%s, loss scaling %s, accum "
      "%d%s, clip %g, checkpoints %s%s",
      std::string(shard::StrategyName(m.strategy)), group, std::string(DTypeName(m.params)),
      std::string(DTypeName(m.grads)), std::string(DTypeName(m.master)),
      std::string(DTypeName(m.optimizer_state)),
      OffloadNote(o.shard),
      m.loss_scaling ? "on" : "off",
      o.grad_accum, o.shard.reduce_every_micro_step ? " (reduce every micro-step)" : "",
      o.grad_clip, StateDictName(o.state_dict_type), o.save_16bit ? " + 16-bit model" : "");
}

std::string ModeJson(const train::TrainOptions& o, std::string_view config_source,
                     const std::vector<std::string>& notes) {
  const ResolvedMode m = ModeOf(o);
  nlohmann::ordered_json j;
  j["event"] = "mode";
  j["strategy"] = std::string(shard::StrategyName(m.strategy));
  j["hybrid_group_size"] = IsHybrid(m.strategy) ? o.shard.hybrid_group_size : 0;
  j["params"] = std::string(DTypeName(m.params));
  j["grads"] = std::string(DTypeName(m.grads));
  j["master"] = std::string(DTypeName(m.master));
  j["optimizer_state"] = std::string(DTypeName(m.optimizer_state));
  const char* offload_device = o.shard.offload_dir.empty() ? "host" : "nvme";
  j["optimizer_device"] = o.shard.offload_optimizer ? offload_device : "compute";
  j["params_device"] = o.shard.offload_params ? offload_device : "compute";
  j["offload_dir"] = o.shard.offload_dir;
  j["loss_scaling"] = m.loss_scaling;
  j["grad_accum"] = o.grad_accum;
  j["reduce_every_micro_step"] = o.shard.reduce_every_micro_step;
  j["grad_clip"] = o.grad_clip;
  j["state_dict_type"] = StateDictName(o.state_dict_type);
  j["save_16bit"] = o.save_16bit;
  if (config_source.empty()) {
    j["config"] = nullptr;
  } else {
    j["config"] = std::string(config_source);
  }
  j["notes"] = notes;
  return j.dump();
}

}  // namespace accel::worker
