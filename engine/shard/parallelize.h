// Parallelize: turns a validated ShardPlan into the parts that hold one rank's model — each
// technique one Apply step, chosen once here from the plan, so that no part (and no caller)
// branches on the strategy afterwards (torchtitan's parallelize, STYLE.md):
//   ApplyOffload    where the optimizer's state lives: compute memory, or an offload::Storage
//                   (host memory or files) chosen once by CreateOptimizerStorage; and where
//                   offloaded parameter shards live when not with it (CreateParamStorage)
//   ApplyPrecision  what the model computes on: fp32 parameters, or fp32 copies of 16-bit ones
//   ApplyPlacement  where parameters live between uses: resident, or sharded (in compute
//                   memory, or offloaded to the optimizer's memory)
//   ApplyPrefetch   gathers ahead of use (FSDP's prefetch flags, DeepSpeed's stage-3 knobs)
//   ApplyReduction  when gradients are reduced: at the accumulation boundary, or per unit
//   ApplyOptimizerValues  what the optimizer updates: parameters in place, bf16 parameters,
//                   or fp32 masters
// then every part allocates what it keeps. ShardedModel (sharded_model.h) drives the result.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "engine/shard/grad_reducer.h"
#include "engine/shard/optimizer_values.h"
#include "engine/shard/param_store.h"
#include "engine/shard/precision.h"
#include "engine/shard/shard_context.h"

namespace accel::shard {

// One rank's model under a plan. Members are declared in the order they must be destroyed
// last-first: the context (memory, communicators) outlives every part.
struct ShardParts {
  std::unique_ptr<ShardContext> context;
  std::unique_ptr<Precision> precision;
  std::unique_ptr<ParamStore> params;
  std::unique_ptr<GradReducer> grads;
  std::unique_ptr<OptimizerValues> optimizer;
};

// Errors: ShardContext::Create's, an offload directory that cannot be written
// (InvalidArgument), allocation failures (ResourceExhausted).
[[nodiscard]] absl::StatusOr<ShardParts> Parallelize(const model::ModelLayout* layout,
                                                     ShardPlan plan, ProcessGroups groups,
                                                     absl::Duration timeout,
                                                     MemoryLedger* ledger, DeviceOps* ops);

// Where the optimizer's state lives for `options` (ApplyOffload's choice, made here only):
// null without offload_optimizer (compute memory), host memory, or files in offload_dir. With
// Mode::kCountOnly, a storage that only charges `ledger` (the memory plan's dry run,
// engine/plan) and never touches the directory. Errors: CreateFileStorage's.
[[nodiscard]] absl::StatusOr<std::unique_ptr<offload::Storage>> CreateOptimizerStorage(
    const ShardOptions& options, MemoryLedger* ledger, offload::Mode mode = offload::Mode::kReal);

// Where the kept parameter shards live when they have a storage of their own: null when they
// are not offloaded or share the optimizer's (ParamsWithOptimizer); else host memory, or files
// in offload_param_dir (ParamOffloadDir). Mode and errors as CreateOptimizerStorage.
[[nodiscard]] absl::StatusOr<std::unique_ptr<offload::Storage>> CreateParamStorage(
    const ShardOptions& options, MemoryLedger* ledger, offload::Mode mode = offload::Mode::kReal);

[[nodiscard]] absl::Status ApplyOffload(ShardParts& parts);
void ApplyPrecision(ShardParts& parts);
void ApplyPlacement(ShardParts& parts);
void ApplyPrefetch(ShardParts& parts);
void ApplyReduction(ShardParts& parts);
void ApplyOptimizerValues(ShardParts& parts);

}  // namespace accel::shard
