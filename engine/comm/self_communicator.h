// A communicator of one rank: every collective is a local copy (or nothing), completed at once,
// and no bytes cross a wire. Lets single-process training run the same sharded code path.
#pragma once

#include <memory>

#include "engine/comm/communicator.h"

namespace accel::comm {

std::unique_ptr<Communicator> CreateSelfCommunicator();

}  // namespace accel::comm
