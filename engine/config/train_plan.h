// TrainPlan: the one validated description of how a job trains, resolved from an Accelerate
// YAML (FSDP, DeepSpeed or DDP vocabulary), an optional DeepSpeed JSON, the environment and the
// job file (see resolve.h). Both vocabularies land on the same fields, so the engine never asks
// which file the user wrote.
//
// Strategy and BackwardPrefetch are the engine's own (engine/shard); the rest belong to the
// config module. Every enum has a lower-case name used in the plan's JSON (plan_json.h) and in
// messages.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/shard/shard_plan.h"

namespace accel::config {

// Accelerate's distributed_type values that this engine runs.
enum class DistributedType { kNo, kMultiCpu, kMultiGpu, kFsdp, kDeepSpeed };

// How parameters, gradients and optimizer state are split across ranks (DESIGN.md §3.1), and
// when the next unit's all-gather is issued in backward: the engine's own enums (shard_plan.h),
// so the plan and the engine name them once. FSDP NO_SHARD / ZeRO-0 / DDP are kNoShard, ZeRO-1
// kShardOptimizer ("zero1"), FSDP SHARD_GRAD_OP / ZeRO-2 kShardGradOp, FULL_SHARD / ZeRO-3
// kFullShard, HYBRID_SHARD and _HYBRID_SHARD_ZERO2 the hybrid ones.
using Strategy = shard::Strategy;
using BackwardPrefetch = shard::BackwardPrefetch;

enum class OffloadDevice { kNone, kCpu, kNvme };
enum class WrapPolicy { kTransformerBased, kSizeBased, kNoWrap };
// What periodic checkpoints hold: one gathered file, one file per rank (loadable at another
// world size), or raw per-rank flat shards (same world size only).
enum class StateDictType { kFull, kSharded, kLocal };
enum class PrecisionMode { kNo, kFp16, kBf16 };
enum class FloatType { kFp32, kBf16, kFp16 };

std::string_view Name(DistributedType v);  // "NO", "MULTI_CPU", ... (Accelerate's spelling)
std::string_view Name(Strategy v);         // "no_shard", "zero1", ...
std::string_view Name(OffloadDevice v);    // "none", "cpu", "nvme"
std::string_view Name(WrapPolicy v);       // "transformer_based_wrap", ...
std::string_view Name(BackwardPrefetch v);  // "none", "backward_pre", "backward_post"
// The job file's and command line's spelling ("backward_pre", "backward_post", "none") or
// FSDP's ("BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH"); empty is backward_pre.
// InvalidArgument listing the names otherwise.
[[nodiscard]] absl::StatusOr<BackwardPrefetch> ParseBackwardPrefetch(std::string_view name);
std::string_view Name(StateDictType v);    // "full", "sharded", "local"
std::string_view Name(PrecisionMode v);    // "no", "fp16", "bf16"
std::string_view Name(FloatType v);        // "fp32", "bf16", "fp16"

// Strategies that keep parameters sharded between forward and backward.
bool ShardsParameters(Strategy s);

// Dtype of every buffer class. param_dtype is the dtype parameters are computed in (after the
// all-gather); reduce_dtype the dtype gradients travel in; master_dtype the dtype of the flat
// parameter shards the optimizer updates; optimizer_dtype the dtype of its moments.
struct MixedPrecisionPlan {
  PrecisionMode mode = PrecisionMode::kNo;
  FloatType param_dtype = FloatType::kFp32;
  FloatType reduce_dtype = FloatType::kFp32;
  FloatType master_dtype = FloatType::kFp32;
  FloatType optimizer_dtype = FloatType::kFp32;
};

// Dynamic loss scaling (fp16 only): start at 2^initial_scale_power; on overflow skip the step
// and, once `hysteresis` overflows have been absorbed, halve the scale (not below
// min_loss_scale; 0 = no floor); after loss_scale_window clean steps double it.
struct LossScalingPlan {
  int initial_scale_power = 16;
  int64_t loss_scale_window = 1000;
  int hysteresis = 2;
  double min_loss_scale = 1;
};

// Parameter prefetch and persistence (counts are elements). For FSDP every field is 0, meaning
// FSDP's own rule: gather exactly the next unit, keep nothing gathered, no cap. For DeepSpeed
// ZeRO-3 they are stage3_prefetch_bucket_size, stage3_param_persistence_threshold,
// stage3_max_live_parameters and stage3_max_reuse_distance. A bucket or threshold is nullopt
// while it waits for the model's hidden size ("auto" with no hidden size given).
struct PrefetchPlan {
  std::optional<int64_t> bucket_size = 0;
  std::optional<int64_t> param_persistence_threshold = 0;
  int64_t max_live_parameters = 0;
  int64_t max_reuse_distance = 0;
};

// Gradient-communication tuning (DeepSpeed zero_optimization; FSDP uses the defaults below).
// Not part of the plan's JSON.
struct CommPlan {
  std::optional<int64_t> reduce_bucket_size = 500000000;
  int64_t allgather_bucket_size = 500000000;
  bool overlap_comm = false;
  bool contiguous_gradients = true;
  int64_t sub_group_size = 1000000000;
  std::optional<FloatType> communication_dtype;  // DeepSpeed communication_data_type
};

// NVMe/pinned-memory tuning (DeepSpeed offload_* and aio sections). Not part of the plan's JSON.
struct OffloadTuning {
  bool pin_memory = true;
  int param_buffer_count = 5;
  int64_t param_buffer_size = 100000000;
  int64_t max_in_cpu = 1000000000;
  int optimizer_buffer_count = 4;
  int64_t aio_block_size = 1048576;
  int aio_queue_depth = 8;
  int aio_intra_op_parallelism = 1;
  bool aio_single_submit = false;
  bool aio_overlap_events = true;
};

// Optimizer and scheduler named in a DeepSpeed JSON ("optimizer"/"scheduler" sections). Unset
// when the JSON has none: the job file's optimizer and schedule apply. A field stays nullopt
// while it waits for a job value the caller did not supply.
struct OptimizerPlan {
  std::string type;  // "AdamW", "Adam", "SGD" (DeepSpeed's spelling)
  std::optional<double> lr;
  std::optional<double> weight_decay;
  std::optional<std::array<double, 2>> betas;
  std::optional<double> eps;
  bool adam_w_mode = true;  // Adam with decoupled weight decay
  // Adam's bias corrections (1 - beta^step); false: DeepSpeed's `bias_correction: false`
  // (optim::AdamWConfig::bias_correction).
  bool bias_correction = true;
};
struct SchedulerPlan {
  std::string type;  // "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"
  std::optional<double> warmup_min_lr;
  std::optional<double> warmup_max_lr;
  std::optional<int64_t> warmup_num_steps;
  std::optional<int64_t> total_num_steps;  // WarmupDecayLR / WarmupCosineLR only
  std::string warmup_type = "log";          // log | linear
  double warmup_min_ratio = 0.0;            // WarmupCosineLR: of the optimizer lr
  double cos_min_ratio = 1e-4;              // WarmupCosineLR
};

struct TrainPlan {
  DistributedType distributed_type = DistributedType::kNo;
  int num_processes = 1;   // total over all machines = data-parallel world size
  int num_machines = 1;
  int machine_rank = 0;
  int fsdp_version = 0;    // 1 or 2 for FSDP, 0 otherwise
  // Ranks that share one copy of the sharded state: num_processes, or num_processes /
  // num_machines for the hybrid strategies. Not part of the plan's JSON.
  int shard_group_size = 1;

  Strategy strategy = Strategy::kNoShard;
  bool reshard_after_forward = false;
  OffloadDevice offload_params = OffloadDevice::kNone;
  OffloadDevice offload_optimizer = OffloadDevice::kNone;
  std::string offload_param_nvme_path;      // empty unless offload_params is nvme
  std::string offload_optimizer_nvme_path;  // empty unless offload_optimizer is nvme

  WrapPolicy wrap_policy = WrapPolicy::kNoWrap;
  // Block class names; empty = the model's own block class (Accelerate: _no_split_modules).
  std::vector<std::string> transformer_layer_cls_to_wrap;
  int64_t min_num_params = 0;
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kNone;
  bool forward_prefetch = false;

  StateDictType state_dict_type = StateDictType::kFull;
  // Also write a gathered model file on save (DeepSpeed: 16-bit weights; FSDP FULL_STATE_DICT:
  // the master weights).
  bool save_16bit_model = false;
  bool use_orig_params = true;
  bool sync_module_states = false;
  bool cpu_ram_efficient_loading = false;  // low-memory loading was asked for
  bool zero3_init = false;  // ... and parameters are materialised already sharded
  bool activation_checkpointing = false;

  MixedPrecisionPlan mixed_precision;
  int64_t gradient_accumulation_steps = 1;
  double gradient_clipping = 1.0;  // global L2 norm; 0 = off
  std::optional<int64_t> train_micro_batch_size_per_gpu;  // nullopt: waits for the job
  std::optional<int64_t> train_batch_size;  // micro × accumulation × num_processes
  std::optional<LossScalingPlan> loss_scaling;  // fp16 only
  PrefetchPlan prefetch;

  CommPlan comm;
  OffloadTuning offload_tuning;
  std::optional<OptimizerPlan> optimizer;
  std::optional<SchedulerPlan> scheduler;

  // Human-readable, each naming its source and key path; in the order they arose.
  std::vector<std::string> warnings;
};

}  // namespace accel::config
