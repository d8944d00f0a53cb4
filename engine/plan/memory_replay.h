// The memory planner's engine model (internal to memory_plan.cc): replays, on a MemoryLedger and
// without allocating, every buffer one rank's Trainer charges — setup (Parallelize's resident
// buffers, the initial weights, AdamW's moments, the activations) and `steps` training steps
// (gathers, 16-bit compute copies, local and wire gradients, the optimizer's gradient copies) —
// in the order the engine charges them, with the host DeviceOps' exact-size cache (a recycled
// block is "other" until a later acquire of the same size takes it back).
//
// The sizes come from the ShardPlan the engine builds (padded units, shards, optimizer spans,
// owned ranges); the order follows the model's calls through ParamAccess (engine/model/gpt2.cc)
// and the parts Parallelize composes (engine/shard). The ledger's peaks are then the planned
// peaks; tests/sharding/memory_plan_test.cc checks them against real runs, so a change in the
// engine's buffers shows up there.
//
// Scope: the host DeviceOps (a CPU rank; its compute pool is the ledger's MemoryPool::kDevice,
// named "compute"). A CUDA rank's caching allocator and its model's activations are not modelled.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "engine/base/memory_ledger.h"
#include "engine/config/train_options.h"
#include "engine/model/param_specs.h"
#include "engine/shard/shard_plan.h"

namespace accel::train::internal {

struct ReplayInput {
  const model::ModelLayout* layout = nullptr;
  const shard::ShardPlan* plan = nullptr;
  const config::TrainOptions* options = nullptr;
  int64_t activation_bytes = 0;  // model::Gpt2Activations::PlannedBytes
  int steps = 2;                 // steps replayed after setup (the second reuses the cache)
};

// Charges and releases `ledger` as the rank's Trainer would. The ledger's per-category and pool
// peaks are the planned peaks. The cost does not grow with grad_accum (nor with the batch, which
// only sizes the activations): micro-steps are replayed until one leaves the replay's state as it
// found it, after which every further one would repeat it charge for charge. Internal when no
// micro-step settles within a few (a buffer the replay charges per micro-step and never
// releases: a bug, since the engine would then grow without bound too).
[[nodiscard]] absl::Status ReplayRank(const ReplayInput& input, MemoryLedger* ledger);

}  // namespace accel::train::internal
