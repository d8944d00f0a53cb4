#include "engine/config/lower.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/config/mode.h"

namespace accel::config {
namespace {

// Names a setting in the vocabulary the user wrote it in.
const char* Key(const TrainPlan& p, const char* fsdp, const char* deepspeed,
                const char* other) {
  switch (p.distributed_type) {
    case DistributedType::kFsdp: return fsdp;
    case DistributedType::kDeepSpeed: return deepspeed;
    default: return other;
  }
}

// The DeepSpeed "optimizer" section (absent: the job's AdamW settings stay).
void ApplyOptimizer(const OptimizerPlan& opt, TrainOptions& o,
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
  o.adamw.bias_correction = opt.bias_correction;
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
void ApplyScheduler(const SchedulerPlan& s, TrainOptions& o,
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

absl::Status ApplyTrainPlan(const TrainPlan& p, TrainOptions* options,
                            std::vector<std::string>* notes_out) {
  TrainOptions o = *options;
  std::vector<std::string> errors, notes;
  const bool ds = p.distributed_type == DistributedType::kDeepSpeed;

  // Sharding.
  o.shard.strategy = p.strategy;
  o.shard.hybrid_group_size = shard::IsHybrid(o.shard.strategy) ? p.shard_group_size : 0;
  o.shard.reshard_after_forward = p.reshard_after_forward;
  o.shard.forward_prefetch = p.forward_prefetch;
  o.shard.backward_prefetch = p.backward_prefetch;
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
      ds && (p.strategy == Strategy::kShardGradOp ||
             p.strategy == Strategy::kFullShard);

  // Precision.
  const MixedPrecisionPlan& mp = p.mixed_precision;
  // FSDP's low precision (weights loaded in bf16, no mixed precision): everything in bf16.
  const bool low_precision = mp.param_dtype == FloatType::kBf16 &&
                             mp.master_dtype == FloatType::kBf16 &&
                             mp.optimizer_dtype == FloatType::kBf16;
  if (!low_precision && (mp.master_dtype != FloatType::kFp32 ||
                         mp.optimizer_dtype != FloatType::kFp32)) {
    errors.push_back(absl::StrCat(
        "mixed_precision: master weights in ", std::string(Name(mp.master_dtype)),
        " and optimizer state in ", std::string(Name(mp.optimizer_dtype)),
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
    case StateDictType::kFull:
      o.state_dict_type = TrainOptions::StateDictType::kFull;
      break;
    case StateDictType::kSharded:
      o.state_dict_type = TrainOptions::StateDictType::kSharded;
      break;
    case StateDictType::kLocal:
      o.state_dict_type = TrainOptions::StateDictType::kSharded;
      notes.push_back("fsdp_config.fsdp_state_dict_type: LOCAL_STATE_DICT is saved as "
                      "SHARDED_STATE_DICT (one file per rank, also loadable at another world "
                      "size)");
      break;
  }

  // Offload (docs/sharding.md): the optimizer, the parameter shards, or both, to host memory
  // (cpu) or to files (nvme, DeepSpeed's nvme_path; each its own directory if they differ).
  const char* offload_param_key =
      Key(p, "fsdp_config.fsdp_offload_params", "zero_optimization.offload_param.device",
          "offload_params");
  if (p.offload_params != OffloadDevice::kNone) {
    if (o.shard.strategy != shard::Strategy::kFullShard &&
        o.shard.strategy != shard::Strategy::kHybridShard) {
      errors.push_back(absl::StrCat(
          offload_param_key, ": ", std::string(Name(p.offload_params)),
          " offload needs sharded parameters (FULL_SHARD / ZeRO stage 3, or HYBRID_SHARD), not ",
          std::string(shard::StrategyName(o.shard.strategy))));
    } else {
      // Alone (DeepSpeed runs offload_param without offload_optimizer: the optimizer state
      // and its step stay on the rank) or with the optimizer, each where its own key says:
      // to nvme in a directory of their own when it differs from the optimizer's (another
      // drive for bandwidth), to the host beside an nvme optimizer (Accelerate's Scenario 3).
      o.shard.offload_params = true;
      if (p.offload_params == OffloadDevice::kNvme && p.offload_param_nvme_path.empty()) {
        errors.push_back("zero_optimization.offload_param.nvme_path: nvme offload needs a "
                         "directory");
      }
      if (p.offload_params == OffloadDevice::kNvme &&
          (p.offload_optimizer != OffloadDevice::kNvme ||
           p.offload_param_nvme_path != p.offload_optimizer_nvme_path)) {
        o.shard.offload_param_dir = p.offload_param_nvme_path;
      }
      o.shard.offload_params_to_host = p.offload_params == OffloadDevice::kCpu &&
                                       p.offload_optimizer == OffloadDevice::kNvme;
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
  if (p.offload_optimizer == OffloadDevice::kNvme || p.offload_params == OffloadDevice::kNvme) {
    // sub_group_size 0 (DeepSpeed: one tensor per sub-group) keeps the default tile.
    if (p.comm.sub_group_size > 0) {
      o.shard.offload_tile_numel = std::min(o.shard.offload_tile_numel, p.comm.sub_group_size);
    }
    // DeepSpeed's aio section drives the transfers (AsyncIo); pin_memory locks the staging
    // buffers (mlock, unlocked where refused).
    const OffloadTuning& t = p.offload_tuning;
    o.shard.offload_aio.block_size = t.aio_block_size;
    o.shard.offload_aio.queue_depth = t.aio_queue_depth;
    o.shard.offload_aio.single_submit = t.aio_single_submit;
    o.shard.offload_aio.overlap_events = t.aio_overlap_events;
    o.shard.offload_pin_buffers = t.pin_memory;
    if (absl::Status s = io::ValidateAioOptions(o.shard.offload_aio); !s.ok()) {
      errors.push_back(std::string(s.message()));
    }
  }

  // Per-block recompute; the results are the same bits either way. On when the config or the
  // job asks for it (like Accelerate's plugin flag beside a script's
  // gradient_checkpointing_enable()).
  if (p.activation_checkpointing) o.activation_checkpointing = true;
  // Wrapping and use_orig_params are FSDP words; DeepSpeed plans always say "one unit per
  // block" and DDP has no units.
  const bool fsdp = p.distributed_type == DistributedType::kFsdp;
  bool block_units = p.wrap_policy == WrapPolicy::kTransformerBased;
  for (const std::string& cls : p.transformer_layer_cls_to_wrap) {
    // Hugging Face's decoder-layer classes and llm.c / nanoGPT's "Block"; lower.cc checks the
    // class against the model once it is known.
    if (!model::IsBlockClass(cls)) block_units = false;
  }
  if (fsdp && !block_units) {
    notes.push_back(absl::StrCat(
        "fsdp_config.fsdp_auto_wrap_policy: ", std::string(Name(p.wrap_policy)),
        p.transformer_layer_cls_to_wrap.empty()
            ? ""
            : absl::StrCat(" (", absl::StrJoin(p.transformer_layer_cls_to_wrap, ","), ")"),
        " runs as one unit per transformer block plus the root (the engine's only wrapping)"));
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

}  // namespace accel::config
