// ParamStore: where this rank's parameters live between uses, and how the model gets a unit's
// full parameters — one of:
//   - resident (CreateResidentParams): the full padded unit stays in compute memory (no_shard,
//     zero1, shard_grad_op and their hybrid); where the optimizer state is sharded each rank
//     updates its slice and AfterUpdate all-gathers the slices back;
//   - sharded (CreateShardedParams): only this rank's shard is kept — in compute memory, or in
//     `home`, host memory or files, under parameter offload — and a unit is all-gathered into a
//     transient block before use and freed after (full_shard, hybrid_shard). The root and units
//     under param_persistence_threshold stay gathered for the step once gathered; with
//     SchedulePrefetch a GatherScheduler gathers ahead of use.
// Parameters are in ShardOptions::param_dtype; blocks are charged as params. Collectives run on
// the shard group with the context's deadlines; a failure comes back as their Status.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "engine/model/param_access.h"
#include "engine/shard/shard_context.h"
#include "engine/shard/value_transfer.h"

namespace accel::shard {

class ParamStore {
 public:
  virtual ~ParamStore() = default;

  // Allocates what is kept between steps (zero-filled).
  [[nodiscard]] virtual absl::Status Allocate() = 0;
  // Gathers ahead of use from now on (ShardOptions' prefetch settings). Resident: nothing.
  virtual void SchedulePrefetch() {}

  // Unit u's full parameters (padded_numel values of param_dtype) for its use in `pass`;
  // valid until Release(u, pass).
  [[nodiscard]] virtual absl::StatusOr<const void*> Use(int unit, model::Pass pass) = 0;
  [[nodiscard]] virtual absl::Status Release(int unit, model::Pass pass) = 0;
  // Unit u's full parameters while they are present, else null.
  virtual const void* gathered(int unit) const = 0;

  // The part of unit u, relative to the unit, whose values this rank keeps: [0, numel) when
  // resident, else the real part of its shard (empty for an all-padding shard).
  virtual std::pair<int64_t, int64_t> HeldRange(int unit) const = 0;
  // The kept values at the first element of unit u's optimizer span (ShardContext): what the
  // optimizer updates without masters, and what masters are rounded into.
  virtual MutableValueRef OptimizerSpanParams(int unit) = 0;
  // Sets unit u's kept values from `values`, HeldRange(u)'s elements in fp32 host memory,
  // rounded to param_dtype; padding becomes zero. Local.
  [[nodiscard]] virtual absl::Status Load(int unit, const float* values) = 0;
  // Unit u's full parameters for a save (collective over the shard group when sharded); then
  // DoneSaving(u).
  [[nodiscard]] virtual absl::StatusOr<const void*> GatherForSave(int unit) = 0;
  virtual void DoneSaving(int unit) = 0;

  // Before the updated values are written into the kept ones: gathers in flight complete.
  [[nodiscard]] virtual absl::Status SettleGathers() = 0;
  // After they are: full copies agree with the kept values again (the slices all-gathered, or
  // the stale gathered units freed).
  [[nodiscard]] virtual absl::Status AfterUpdate() = 0;
  // After forward passes with no backward (evaluation): what a step would have kept gathered
  // until its backward or update (the root, persistent and reused units) is given back, so
  // memory is as after a step. Call after SettleGathers. Resident: nothing.
  virtual void ReleaseKept() {}

 protected:
  // Zeroes `block` and sets its first n values from host fp32 `values` (Load's common part).
  static absl::Status LoadBlock(ShardContext& ctx, DeviceBlock& block, bool on_host,
                                const float* values, int64_t n);
};

// Full units in compute memory. `gather_after_update`: the optimizer updates only this rank's
// slice of each unit (its state is sharded), so AfterUpdate all-gathers the slices.
std::unique_ptr<ParamStore> CreateResidentParams(ShardContext* ctx, bool gather_after_update);
// This rank's shards, kept in `home`: the compute ops, or an offload's host or file-backed ops.
std::unique_ptr<ParamStore> CreateShardedParams(ShardContext* ctx, DeviceOps* home);

}  // namespace accel::shard
