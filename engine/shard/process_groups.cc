#include "engine/shard/process_groups.h"

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/shard/ring_traffic.h"

namespace accel::shard {

absl::StatusOr<OwnedProcessGroups> CreateGlooProcessGroups(comm::Store* store,
                                                           const std::string& prefix, int rank,
                                                           int world, const ShardOptions& options,
                                                           const comm::GlooOptions& gloo) {
  OwnedProcessGroups g;
  if (!gloo.node_of_rank.empty() && static_cast<int>(gloo.node_of_rank.size()) != world) {
    return absl::InvalidArgumentError(absl::StrCat("node_of_rank has ", gloo.node_of_rank.size(),
                                                   " entries for a world of ", world));
  }
  ACCEL_ASSIGN_OR_RETURN(g.world,
                         comm::CreateGlooCommunicator(store, prefix + "/world", rank, world, gloo));
  if (!IsHybrid(options.strategy)) return g;
  const int G = options.hybrid_group_size;
  if (G < 1 || world % G != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("hybrid group size ", G, " does not divide the world of ", world));
  }
  // Each subgroup's placement, indexed by its own group ranks.
  comm::GlooOptions shard_gloo = gloo, replicate_gloo = gloo;
  if (!gloo.node_of_rank.empty()) {
    shard_gloo.node_of_rank.clear();
    replicate_gloo.node_of_rank.clear();
    for (int r : ShardGroupMembers(rank, G))
      shard_gloo.node_of_rank.push_back(gloo.node_of_rank[r]);
    for (int r : ReplicateGroupMembers(rank, world, G)) {
      replicate_gloo.node_of_rank.push_back(gloo.node_of_rank[r]);
    }
  }
  ACCEL_ASSIGN_OR_RETURN(
      g.shard, comm::CreateGlooCommunicator(store, absl::StrCat(prefix, "/shard", rank / G),
                                            rank % G, G, shard_gloo));
  ACCEL_ASSIGN_OR_RETURN(g.replicate,
                         comm::CreateGlooCommunicator(store, absl::StrCat(prefix, "/rep", rank % G),
                                                      rank / G, world / G, replicate_gloo));
  return g;
}

}  // namespace accel::shard
