// What a lowered job runs, in words and as JSON: the strategy, the dtype of every buffer class
// (DESIGN.md §3.2), where the optimizer state and parameters live, accumulation, clipping and
// checkpoint kind. Workers print it at start, `accelctl config explain` shows it, acceld keeps
// it with the job.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/config/train_options.h"
#include "engine/config/train_plan.h"
#include "engine/tensor/dtype.h"

namespace accel::config {

DType ToDType(FloatType t);

// The dtype of every buffer class the options ask for: parameters as computed, gradients as
// reduced, the fp32 master copy the optimizer updates (the parameters themselves when nothing
// is low precision) and the optimizer state.
struct ResolvedMode {
  shard::Strategy strategy = shard::Strategy::kNoShard;
  DType params = DType::kF32;
  DType grads = DType::kF32;
  DType master = DType::kF32;
  DType optimizer_state = DType::kF32;
  bool loss_scaling = false;  // fp16 dynamic loss scaling
};
ResolvedMode ModeOf(const TrainOptions& options);

// "fp32", "bf16 mixed", "fp16 mixed" or "bf16 low precision".
std::string PrecisionName(const TrainOptions& options);
// Where offloaded state lives: "compute" (not offloaded), "host" or "nvme".
std::string OptimizerDevice(const TrainOptions& options);
std::string ParamsDevice(const TrainOptions& options);
// The directory offloaded parameter shards live in: offload_dir when they share the
// optimizer's storage, offload_param_dir when they have their own; empty on the host or
// without parameter offload.
std::string ParamsOffloadDir(const TrainOptions& options);
// "sharded" or "full".
std::string StateDictName(TrainOptions::StateDictType t);

// "full_shard (hybrid group 2): params bf16, grads bf16, master f32, optimizer state f32,
// loss scaling off, accum 4 (reduce every micro-step), clip 1"
std::string DescribeMode(const TrainOptions& options);
// One JSON object: {"event":"mode","strategy":...,"hybrid_group_size":..,"params":"bf16",
// "grads":..,"master":..,"optimizer_state":..,"optimizer_device":..,"params_device":..,
// "offload_dir":..,"offload_param_dir":..,"loss_scaling":bool,"grad_accum":..,"reduce_every_micro_step":bool,
// "grad_clip":..,"state_dict_type":"sharded"|"full","save_16bit":bool,
// "activation_checkpointing":bool,
// "config":<source or null>,"notes":[...]}
std::string ModeJson(const TrainOptions& options, std::string_view config_source,
                     const std::vector<std::string>& notes);

}  // namespace accel::config
