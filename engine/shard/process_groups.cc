#include "engine/shard/process_groups.h"

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::shard {

absl::StatusOr<OwnedProcessGroups> CreateGlooProcessGroups(comm::Store* store,
                                                           const std::string& prefix, int rank,
                                                           int world, const ShardOptions& options,
                                                           const comm::GlooOptions& gloo) {
  OwnedProcessGroups g;
  ACCEL_ASSIGN_OR_RETURN(g.world, comm::CreateGlooCommunicator(store, prefix + "/world", rank,
                                                               world, gloo));
  if (!IsHybrid(options.strategy)) return g;
  const int G = options.hybrid_group_size;
  if (G < 1 || world % G != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("hybrid group size ", G, " does not divide the world of ", world));
  }
  ACCEL_ASSIGN_OR_RETURN(g.shard,
                         comm::CreateGlooCommunicator(store, absl::StrCat(prefix, "/shard", rank / G),
                                                      rank % G, G, gloo));
  ACCEL_ASSIGN_OR_RETURN(g.replicate,
                         comm::CreateGlooCommunicator(store, absl::StrCat(prefix, "/rep", rank % G),
                                                      rank / G, world / G, gloo));
  return g;
}

}  // namespace accel::shard
