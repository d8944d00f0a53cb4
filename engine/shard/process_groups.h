// The communicators a rank needs for a sharding plan, created over gloo from one rendezvous
// store: the world group, and for hybrid plans the shard group (hybrid_group_size consecutive
// ranks) and the replicate group (the ranks at the same position in every shard group).
// Creation is collective: every rank of the world calls it with the same store, prefix and
// options. Errors are the communicators' (DeadlineExceeded naming ranks that never joined).
// gloo.node_of_rank, when set, is indexed by world rank; each subgroup gets its members' nodes,
// so every communicator counts its cross-node bytes (CommStats).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/comm/gloo_communicator.h"
#include "engine/comm/store.h"
#include "engine/shard/shard_plan.h"
#include "engine/shard/shard_context.h"

namespace accel::shard {

struct OwnedProcessGroups {
  std::unique_ptr<comm::Communicator> world;
  std::unique_ptr<comm::Communicator> shard;      // null: the world is the shard group
  std::unique_ptr<comm::Communicator> replicate;  // null: no replication
  ProcessGroups view() const {
    return {world.get(), shard ? shard.get() : world.get(), replicate.get()};
  }
};

[[nodiscard]] absl::StatusOr<OwnedProcessGroups> CreateGlooProcessGroups(
    comm::Store* store, const std::string& prefix, int rank, int world,
    const ShardOptions& options, const comm::GlooOptions& gloo = {});

}  // namespace accel::shard
