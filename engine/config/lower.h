// The bridge from the config contract (engine/config: an Accelerate YAML + DeepSpeed JSON
// resolved into a TrainPlan) to what the engine takes (train::TrainOptions). Both worker modes
// use it: `accel-worker --standalone --config F` and daemon workers whose JobSpec carries an
// accelerate_config_text. docs/config.md §10 lists every field and what it becomes.
//
// Order of use:
//   1. JobSettingsFromOptions(options) — the job's values that fill the config's "auto" fields
//      (micro batch, lr, betas, eps, weight decay, warmup, steps, the model's hidden size).
//   2. config::ResolvePlan / ResolveDocuments with those settings (job_complete = true).
//   3. CheckPlanWorld(plan, world) — the config's num_processes must be the gang's size.
//   4. ApplyTrainPlan(plan, &options, &notes) — overwrite every field the plan decides.
// Pure functions over values; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "engine/base/env.h"
#include "engine/config/inputs.h"
#include "engine/config/train_plan.h"
#include "engine/tensor/dtype.h"
#include "engine/train/trainer.h"

namespace accel::worker {

// The job's side of the resolution: every JobSettings field from `options`. hidden_size comes
// from the model preset or config.json; it stays unset when the model cannot be read
// (Trainer::Create reports that later). load_dtype stays unset (weights load as fp32).
config::JobSettings JobSettingsFromOptions(const train::TrainOptions& options,
                                           Env* env = Env::Default());

// InvalidArgument "<source>: num_processes is 4 but the world size is 2 (<world_source>)" when
// the plan was resolved for another gang size.
[[nodiscard]] absl::Status CheckPlanWorld(const config::TrainPlan& plan, int world_size,
                                          std::string_view world_source);

// Writes every field the plan decides into `options` (the rest — model, data, steps, seeds,
// checkpoint cadence — is the job's). Fields the plan leaves unset ("auto" the job did not
// fill, e.g. a DeepSpeed bucket size without a hidden size) keep the value already in
// `options`. Settings that do not change the trained model but cannot be honoured (activation
// checkpointing, a wrap policy other than one unit per GPT-2 block, use_orig_params false,
// LOCAL_STATE_DICT, the DeepSpeed scheduler's warmup shape) are appended to `notes`, one line
// each, naming the config key. Settings that would change the result or break the user's
// memory budget (parameter / optimizer offload, SGD, Adam with L2 weight decay, a scheduler
// the LR schedule cannot express, fp16/bf16 master weights) are InvalidArgument, every problem
// on its own line, each naming the config key. `options` is unchanged on error.
[[nodiscard]] absl::Status ApplyTrainPlan(const config::TrainPlan& plan,
                                          train::TrainOptions* options,
                                          std::vector<std::string>* notes = nullptr);

DType ToDType(config::FloatType t);

// The dtype of every buffer class the options ask for (DESIGN.md §3.2): parameters as
// computed, gradients as reduced, the fp32 master copy the optimizer updates (the parameters
// themselves when nothing is low precision) and the optimizer state.
struct ResolvedMode {
  shard::Strategy strategy = shard::Strategy::kNoShard;
  DType params = DType::kF32;
  DType grads = DType::kF32;
  DType master = DType::kF32;
  DType optimizer_state = DType::kF32;
  bool loss_scaling = false;  // fp16 dynamic loss scaling
};
ResolvedMode ModeOf(const train::TrainOptions& options);
// "full_shard (hybrid group 2): params bf16, grads bf16, master f32, optimizer state f32,
// loss scaling off, accum 4 (reduce every micro-step), clip 1"
std::string DescribeMode(const train::TrainOptions& options);
// One JSON object: {"event":"mode","strategy":...,"hybrid_group_size":..,"params":"bf16",
// "grads":..,"master":..,"optimizer_state":..,"loss_scaling":bool,"grad_accum":..,
// "reduce_every_micro_step":bool,"grad_clip":..,"state_dict_type":"sharded"|"full",
// "save_16bit":bool,"config":<source or null>,"notes":[...]}
std::string ModeJson(const train::TrainOptions& options, std::string_view config_source,
                     const std::vector<std::string>& notes);

}  // namespace accel::worker
