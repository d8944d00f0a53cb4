#include "engine/shard/cuda/nccl_process_groups.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::shard {

absl::StatusOr<OwnedProcessGroups> CreateNcclProcessGroups(comm::Store* store,
                                                           const std::string& prefix, int rank,
                                                           int world, int device,
                                                           const ShardOptions& options,
                                                           const comm::NcclOptions& nccl) {
  const bool hybrid = IsHybrid(options.strategy);
  const int G = options.hybrid_group_size;
  if (hybrid && (G < 1 || world % G != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("hybrid group size ", G, " does not divide the world of ", world));
  }
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<comm::NcclCommunicator> world_comm,
                         comm::CreateNcclCommunicator(store, prefix + "/world", rank, world,
                                                      device, nccl));
  OwnedProcessGroups g;
  if (hybrid) {
    // Both splits are collective on the world, in the same order on every rank.
    ACCEL_ASSIGN_OR_RETURN(g.shard,
                           comm::CreateNcclCommunicatorSplit(*world_comm, rank / G, rank % G, nccl));
    ACCEL_ASSIGN_OR_RETURN(g.replicate,
                           comm::CreateNcclCommunicatorSplit(*world_comm, rank % G, rank / G, nccl));
  }
  g.world = std::move(world_comm);
  return g;
}

}  // namespace accel::shard
