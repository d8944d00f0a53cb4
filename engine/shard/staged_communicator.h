// StagedCommunicator: host-memory collectives over a communicator whose buffers must be device
// memory (NCCL), by staging through a DeviceOps — for the small host-side agreements a trainer
// makes besides the sharding engine's tensors (checkpoint outcomes, per-rank statistics, the
// initial weights unit by unit).
//
// Each operation copies the host input into a block from `ops`, runs the inner collective on
// it (Before/AfterCollective ordered), copies the result back and returns an already-completed
// Work holding the outcome: it is synchronous, which suits values the host reads at once. Sizes,
// dtypes and the inner communicator's deadlines and errors are unchanged; stats() are the
// inner's. Thread safety: one caller at a time (the trainer thread).
#pragma once

#include <memory>

#include "absl/time/time.h"
#include "engine/comm/communicator.h"
#include "engine/shard/device_ops.h"

namespace accel::shard {

// Not owning: `inner` and `ops` must outlive the result. `timeout` bounds each host wait.
std::unique_ptr<comm::Communicator> CreateStagedCommunicator(comm::Communicator* inner,
                                                             DeviceOps* ops,
                                                             absl::Duration timeout);

}  // namespace accel::shard
