#include "engine/config/convert.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace accel::config {
namespace {

using nlohmann::ordered_json;

std::string Bool(bool b) { return b ? "true" : "false"; }

std::string CommonYaml(const TrainPlan& p) {
  return absl::StrCat("machine_rank: ", p.machine_rank, "\nnum_machines: ", p.num_machines,
                      "\nnum_processes: ", p.num_processes, "\n");
}

absl::Status Blocked(std::string_view to, const std::vector<std::string>& reasons) {
  return absl::InvalidArgumentError(absl::StrCat("no ", std::string(to), " equivalent: ",
                                                 absl::StrJoin(reasons, "; ")));
}

}  // namespace

absl::StatusOr<Conversion> ConvertToDeepSpeed(const TrainPlan& p, std::string_view json_name) {
  if (p.distributed_type == DistributedType::kDeepSpeed) {
    return absl::InvalidArgumentError("the config is already DeepSpeed");
  }
  std::vector<std::string> blocked;
  Conversion out;
  int stage = 0;
  switch (p.strategy) {
    case Strategy::kNoShard: stage = 0; break;
    case Strategy::kShardOptimizer: stage = 1; break;
    case Strategy::kShardGradOp: stage = 2; break;
    case Strategy::kFullShard: stage = 3; break;
    case Strategy::kHybridShard:
    case Strategy::kHybridShardZero2:
      blocked.push_back(absl::StrCat("strategy ", std::string(Name(p.strategy)),
                                     " (DeepSpeed has no shard-within-node, replicate-across "
                                     "strategy; ZeRO++ hpZ differs)"));
      break;
  }
  if (p.offload_params != OffloadDevice::kNone && stage != 3) {
    blocked.push_back(absl::StrCat("parameter offload with ", std::string(Name(p.strategy)),
                                   " (DeepSpeed offloads parameters only at ZeRO stage 3)"));
  }
  if (!blocked.empty()) return Blocked("DeepSpeed", blocked);

  auto note = [&](std::string text) { out.notes.push_back(std::move(text)); };
  if (p.wrap_policy != WrapPolicy::kTransformerBased) {
    note(absl::StrCat("wrap_policy ", std::string(Name(p.wrap_policy)),
                      ": DeepSpeed has no wrap policy; it runs one unit per transformer block"));
  } else if (!p.transformer_layer_cls_to_wrap.empty()) {
    note("transformer_layer_cls_to_wrap: DeepSpeed always uses the model's block class");
  }
  if (stage == 3 && (p.backward_prefetch != BackwardPrefetch::kBackwardPre ||
                     !p.forward_prefetch)) {
    note("prefetch: DeepSpeed ZeRO-3 prefetches in both passes (stage3_prefetch_bucket_size); "
         "FSDP's backward_prefetch/forward_prefetch choice has no equivalent");
  }
  if (p.state_dict_type == StateDictType::kFull) {
    note("FULL_STATE_DICT: written as stage3_gather_16bit_weights_on_model_save (a gathered "
         "model file on save); DeepSpeed keeps the optimizer state sharded");
  } else if (p.state_dict_type == StateDictType::kLocal) {
    note("LOCAL_STATE_DICT: DeepSpeed checkpoints are sharded per rank and reshardable");
  }
  if (!p.use_orig_params) note("use_orig_params false: DeepSpeed always keeps parameter names");
  if (stage != 3 && p.cpu_ram_efficient_loading) {
    note("cpu_ram_efficient_loading: DeepSpeed's zero3_init applies at stage 3 only");
  }

  ordered_json ds = ordered_json::object();
  if (p.mixed_precision.mode == PrecisionMode::kFp16) {
    ordered_json fp16 = {{"enabled", true}, {"loss_scale", 0}};
    if (p.loss_scaling) {
      fp16["initial_scale_power"] = p.loss_scaling->initial_scale_power;
      fp16["loss_scale_window"] = p.loss_scaling->loss_scale_window;
      fp16["hysteresis"] = p.loss_scaling->hysteresis;
      fp16["min_loss_scale"] = p.loss_scaling->min_loss_scale > 0 ? p.loss_scaling->min_loss_scale
                                                                  : 1.0;
      if (p.loss_scaling->min_loss_scale <= 0) {
        note("loss scaling: DeepSpeed needs a floor; min_loss_scale 1 written");
      }
    }
    ds["fp16"] = fp16;
    ds["bf16"] = {{"enabled", false}};
  } else {
    ds["fp16"] = {{"enabled", false}};
    ds["bf16"] = {{"enabled", p.mixed_precision.mode == PrecisionMode::kBf16}};
  }
  if (p.mixed_precision.mode == PrecisionMode::kNo &&
      p.mixed_precision.master_dtype != FloatType::kFp32) {
    note("weights loaded in low precision without mixed precision: DeepSpeed trains fp32 "
         "masters");
  }
  ordered_json zero = {{"stage", stage}};
  if (p.offload_params != OffloadDevice::kNone) {
    zero["offload_param"] = {{"device", std::string(Name(p.offload_params))},
                             {"pin_memory", true}};
  }
  if (p.offload_optimizer != OffloadDevice::kNone) {
    zero["offload_optimizer"] = {{"device", std::string(Name(p.offload_optimizer))},
                                 {"pin_memory", true}};
  }
  if (stage == 3) {
    zero["overlap_comm"] = true;
    zero["contiguous_gradients"] = true;
    zero["reduce_bucket_size"] = "auto";
    zero["stage3_prefetch_bucket_size"] = "auto";
    zero["stage3_param_persistence_threshold"] = "auto";
  }
  zero["stage3_gather_16bit_weights_on_model_save"] = p.save_16bit_model;
  ds["zero_optimization"] = zero;
  // The section's presence is what switches per-block checkpointing on (deepspeed_json.h).
  if (p.activation_checkpointing) {
    ds["activation_checkpointing"] = {{"partition_activations", false},
                                      {"cpu_checkpointing", false},
                                      {"contiguous_memory_optimization", false}};
  }
  ds["gradient_accumulation_steps"] = "auto";
  ds["gradient_clipping"] = "auto";
  ds["train_batch_size"] = "auto";
  ds["train_micro_batch_size_per_gpu"] = "auto";
  out.deepspeed_json = ds.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
  out.accelerate_yaml = absl::StrCat(
      "compute_environment: LOCAL_MACHINE\n", "deepspeed_config:\n",
      "  deepspeed_config_file: ", std::string(json_name), "\n",
      "  zero3_init_flag: ", Bool(stage == 3 && p.cpu_ram_efficient_loading), "\n",
      "distributed_type: DEEPSPEED\n", CommonYaml(p));
  return out;
}

absl::StatusOr<Conversion> ConvertToFsdp(const TrainPlan& p) {
  if (p.distributed_type == DistributedType::kFsdp) {
    return absl::InvalidArgumentError("the config is already FSDP");
  }
  std::vector<std::string> blocked;
  Conversion out;
  std::string strategy;
  switch (p.strategy) {
    case Strategy::kNoShard: strategy = "NO_SHARD"; break;
    case Strategy::kShardGradOp: strategy = "SHARD_GRAD_OP"; break;
    case Strategy::kFullShard: strategy = "FULL_SHARD"; break;
    case Strategy::kHybridShard: strategy = "HYBRID_SHARD"; break;
    case Strategy::kHybridShardZero2: strategy = "HYBRID_SHARD_ZERO2"; break;
    case Strategy::kShardOptimizer:
      blocked.push_back("ZeRO stage 1 (FSDP has no optimizer-only sharding; SHARD_GRAD_OP also "
                        "shards gradients)");
      break;
  }
  bool offload = false;
  if (p.offload_params != p.offload_optimizer) {
    blocked.push_back(absl::StrCat("offload_param ", std::string(Name(p.offload_params)),
                                   " with offload_optimizer ",
                                   std::string(Name(p.offload_optimizer)),
                                   " (FSDP offloads parameters, gradients and optimizer state "
                                   "together or not at all)"));
  } else if (p.offload_params == OffloadDevice::kNvme) {
    blocked.push_back("NVMe offload (FSDP offloads to CPU memory only)");
  } else if (p.offload_params == OffloadDevice::kCpu) {
    offload = true;
  }
  if (!blocked.empty()) return Blocked("FSDP", blocked);

  auto note = [&](std::string text) { out.notes.push_back(std::move(text)); };
  if (p.gradient_accumulation_steps != 1) {
    note(absl::StrCat("gradient_accumulation_steps ", p.gradient_accumulation_steps,
                      ": FSDP takes it from the job file; set it there"));
  }
  if (p.gradient_clipping != 1.0) {
    note(absl::StrCat("gradient_clipping ", p.gradient_clipping,
                      ": FSDP takes it from the job file; set it there"));
  }
  if (p.optimizer || p.scheduler) {
    note("optimizer/scheduler sections: FSDP takes them from the job file");
  }
  if (p.loss_scaling && (p.loss_scaling->loss_scale_window != 2000 ||
                         p.loss_scaling->hysteresis != 1)) {
    note("fp16 loss scaling: FSDP uses the gradient scaler's defaults (window 2000, no "
         "hysteresis)");
  }
  if (p.mixed_precision.reduce_dtype != p.mixed_precision.param_dtype) {
    note("communication_data_type: FSDP reduces in the mixed-precision dtype");
  }
  if (ShardsParameters(p.strategy)) {
    note("stage3 prefetch/persistence tuning: FSDP prefetches exactly one unit ahead");
  }
  if (p.save_16bit_model) {
    note("zero3_save_16bit_model: written as FULL_STATE_DICT, which also gathers the optimizer "
         "state at every save");
  }
  const bool prefetch = p.backward_prefetch == BackwardPrefetch::kBackwardPre;
  out.accelerate_yaml = absl::StrCat(
      "compute_environment: LOCAL_MACHINE\n", "distributed_type: FSDP\n", "fsdp_config:\n",
      "  fsdp_activation_checkpointing: ", Bool(p.activation_checkpointing), "\n",
      "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n",
      "  fsdp_backward_prefetch: ", prefetch ? "BACKWARD_PRE" : "NO_PREFETCH", "\n",
      "  fsdp_cpu_ram_efficient_loading: ", Bool(p.cpu_ram_efficient_loading), "\n",
      "  fsdp_forward_prefetch: ", Bool(p.forward_prefetch), "\n",
      "  fsdp_offload_params: ", Bool(offload), "\n",
      "  fsdp_sharding_strategy: ", strategy, "\n",
      "  fsdp_state_dict_type: ", p.save_16bit_model ? "FULL_STATE_DICT" : "SHARDED_STATE_DICT",
      "\n", "  fsdp_sync_module_states: true\n", "  fsdp_use_orig_params: true\n",
      "  fsdp_version: 1\n", "mixed_precision: '", std::string(Name(p.mixed_precision.mode)), "'\n",
      CommonYaml(p));
  return out;
}

}  // namespace accel::config
