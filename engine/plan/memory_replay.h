// The memory planner's engine model (internal to memory_plan.cc): replays, on a MemoryLedger and
// without allocating, every buffer one rank's Trainer charges — setup (Parallelize's resident
// buffers, the initial weights, AdamW's moments, the activations) and `steps` training steps
// (gathers, 16-bit compute copies, local and wire gradients, the optimizer's gradient copies) —
// in the order the engine charges them, with the host DeviceOps' exact-size cache (a recycled
// block is "other" until a later acquire of the same size takes it back).
//
// Why it cannot drift from the engine:
//   - The sizes are the ShardPlan's (padded units, shards, optimizer spans, owned ranges): the
//     plan the engine allocates from, built by the same ShardPlan::Create.
//   - Where the optimizer's state lives (and the offloaded parameters', CreateParamStorage),
//     and every choice that follows from it (which pool its
//     blocks are charged to, whether gradient copies are kept, whether the update streams
//     through TileStream buffers, whether eviction drops the transient cache), is not restated
//     here: the replay asks the engine's own offload::Storage, created by the engine's own
//     choice (shard::CreateOptimizerStorage, which ApplyOffload calls) in count-only mode, and
//     its persistent optimizer blocks are charged by that storage's Allocate.
//   - What remains hand-ordered is the sequence of calls within a step (which unit is gathered,
//     released, reduced when), because running the real model would cost the model's compute;
//     tests/sharding/memory_plan_test.cc runs every strategy, dtype, offload and accumulation
//     against real runs' ledgers (within 2%), so a change to that order fails there.
//
// Scope: the host DeviceOps (a CPU rank; its compute pool is the ledger's MemoryPool::kDevice,
// named "compute"). A CUDA rank's caching allocator and its model's activations are not modelled.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "engine/base/memory_ledger.h"
#include "engine/model/param_specs.h"
#include "engine/plan/memory_plan.h"
#include "engine/shard/shard_plan.h"

namespace accel::plan::internal {

struct ReplayInput {
  const model::ModelLayout* layout = nullptr;
  const shard::ShardPlan* plan = nullptr;
  const PlannedRun* run = nullptr;
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

}  // namespace accel::plan::internal
