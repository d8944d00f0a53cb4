// config::TrainOptions -> plan::PlannedRun: the options the memory plan reads. Here, not in
// engine/plan, because config sits above plan (DESIGN.md §2); every caller of plan::PlanMemory
// with a TrainOptions goes through this one mapping.
#pragma once

#include "engine/config/train_options.h"
#include "engine/plan/memory_plan.h"

namespace accel::config {

inline plan::PlannedRun PlannedRunOf(const TrainOptions& o) {
  return {.batch = o.batch,
          .seq = o.seq,
          .grad_accum = o.grad_accum,
          .shard = o.shard,
          .activation_checkpointing = o.activation_checkpointing,
          .loads_weights = !o.init_weights.empty(),
          .zero3_init = o.zero3_init,
          .cpu_ram_efficient_loading = o.cpu_ram_efficient_loading,
          .sync_module_states = o.sync_module_states};
}

}  // namespace accel::config
