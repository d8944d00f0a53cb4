// MemoryPlan: the peak bytes one rank will hold, by pool and category, worked out before anything
// is allocated (DESIGN.md §3.3) — from the model, the TrainOptions (batch, sequence, strategy,
// dtypes, offload, activation checkpointing), the world size and the rank, through the same
// ShardPlan the engine builds and a replay of the buffers its Trainer charges, through the
// engine's own offload storage in count-only mode (memory_replay.h says why the two cannot
// drift). For a CPU rank (the host DeviceOps) the plan equals the MemoryLedger's peaks of a real
// run: tests/sharding/memory_plan_test.cc runs every strategy against it.
// Module engine/plan (target accel_plan): used by the worker's check (worker/memory_check.h)
// and `accelctl config explain` (client/explain_memory.h).
//
// Beside it, DeepSpeed's own estimator (stage3.py's estimate_zero3_model_states_mem_needs,
// zero_init, additional_buffer_factor 1.5) for comparison: model states only, no activations.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"
#include "engine/model/model_config.h"
#include "engine/shard/shard_plan.h"

namespace accel::plan {

struct MemoryPlanOptions {
  int world = 1;
  int rank = 0;              // the rank planned in detail (its peaks per category)
  int ranks_on_machine = 1;  // ranks first_local_rank .. + n - 1 share this machine's memory
  int first_local_rank = 0;
  // Whether the model multiplies in bf16 (the CPU runner's choice: bf16 parameters on a CPU with
  // native bf16 dot products); unset: decided as CreateCpuModelRunner decides here.
  std::optional<bool> bf16_matmuls;
};

// DeepSpeed's estimate_zero3_model_states_mem_needs for the same model and offload settings.
struct DeepSpeedEstimate {
  int64_t total_params = 0;
  int64_t largest_layer_params = 0;  // the largest single tensor (GPT-2: wte)
  int gpus_per_node = 1, num_nodes = 1;
  int64_t gpu_bytes_per_rank = 0;    // "per GPU"
  int64_t cpu_bytes_per_node = 0;    // "per CPU" (the node's host memory)
};

struct MemoryPlan {
  std::string model;
  int64_t num_params = 0;
  int64_t batch = 0, seq = 0;
  std::string strategy;  // ShardPlan::Describe()
  std::string dtypes;    // "fp32", "bf16 params, bf16 grads, fp32 masters", ...
  int world = 1, rank = 0, ranks_on_machine = 1;
  bool bf16_matmuls = false;
  // Rank `rank`'s peak per [pool][category], and the peak of each pool's sum (not a sum of
  // peaks: buffers of different categories come and go at different times).
  std::array<std::array<int64_t, kNumMemoryCategories>, kNumMemoryPools> peak{};
  std::array<int64_t, kNumMemoryPools> pool_peak{};
  // The machine's ranks together: Σ of each local rank's pool peak.
  std::array<int64_t, kNumMemoryPools> machine_pool_peak{};
  DeepSpeedEstimate deepspeed;

  int64_t Peak(MemoryPool pool, MemoryCategory category) const {
    return peak[static_cast<int>(pool)][static_cast<int>(category)];
  }
  // What the rank holds in RAM on a CPU machine: its compute and host pools.
  int64_t RankRamBytes() const;
  int64_t MachineRamBytes() const;
};

// What the plan reads of a run: the options that size a rank's memory. engine/config sits above
// plan (DESIGN.md §2), so config fills this from its TrainOptions (config::PlannedRunOf,
// engine/config/planned_run.h); the plan never sees the whole options.
struct PlannedRun {
  int64_t batch = 4;
  int64_t seq = 64;
  int64_t grad_accum = 1;
  shard::ShardOptions shard;
  bool activation_checkpointing = false;
  // How the weights arrive (the setup's transient buffers, memory_replay.cc).
  bool loads_weights = false;  // TrainOptions::init_weights is set
  bool zero3_init = false;
  bool cpu_ram_efficient_loading = false;
  bool sync_module_states = false;
};

// InvalidArgument naming the problem for a plan the engine would refuse (a bad world or rank,
// a hybrid group that does not divide the world, a bad batch or sequence).
[[nodiscard]] absl::StatusOr<MemoryPlan> PlanMemory(const model::ModelConfig& config,
                                                    const PlannedRun& run,
                                                    const MemoryPlanOptions& plan_options);

// {"model":..,"rank":{"compute":{"params":..,...,"total":..},...,"total":..},
//  "machine":{"ranks":..,"compute":..,"host":..,"nvme":..,"ram":..},"deepspeed_estimator":{..}}
std::string MemoryPlanJson(const MemoryPlan& plan);
// The human table: one row per pool and category with bytes, pool totals, the rank's and the
// machine's totals, and DeepSpeed's estimator.
std::string MemoryPlanTable(const MemoryPlan& plan);
// "1.23 GiB" / "456.7 MiB" / "12 B".
std::string FormatBytes(int64_t bytes);

}  // namespace accel::plan
