// The plan as JSON (what `accelctl config explain --output json` prints) and as aligned text.
// The JSON object has exactly these top-level keys, in this order:
//   distributed_type num_processes num_machines strategy reshard_after_forward offload_params
//   offload_optimizer offload_param_nvme_path offload_optimizer_nvme_path wrap_policy
//   transformer_layer_cls_to_wrap min_num_params backward_prefetch forward_prefetch
//   state_dict_type save_16bit_model use_orig_params sync_module_states
//   cpu_ram_efficient_loading zero3_init activation_checkpointing mixed_precision
//   gradient_accumulation_steps gradient_clipping train_micro_batch_size_per_gpu
//   train_batch_size loss_scaling prefetch warnings
// Enum values are the lower-case names of train_plan.h (distributed_type keeps Accelerate's
// upper case). A value still waiting for the job is null, as are unused nvme paths and
// loss_scaling without fp16.
#pragma once

#include <string>

#include "nlohmann/json.hpp"
#include "engine/config/train_plan.h"

namespace accel::config {

nlohmann::ordered_json PlanToJson(const TrainPlan& plan);
// Two-space-indented JSON text; never throws (invalid UTF-8 in names is replaced).
std::string PlanToJsonText(const TrainPlan& plan);
// "key: value" lines for people, then the optimizer and scheduler a DeepSpeed file sets (when
// it sets them), warnings last as "warning: ..." lines.
std::string PlanToText(const TrainPlan& plan);
// {"optimizer": {...} | null, "scheduler": {...} | null}: what a DeepSpeed file's optimizer and
// scheduler sections set (they replace the job's). Kept apart from PlanToJson, whose keys are
// fixed; `accelctl config explain --output json` adds the ones that are not null.
nlohmann::ordered_json OptimizerPlanJson(const TrainPlan& plan);

}  // namespace accel::config
