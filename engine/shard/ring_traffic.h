// Ring theory of one training step's traffic, per rank and split by link: the bytes a rank sends
// per step under a sharding strategy, and the part of them that goes to a rank on another node.
// The formula is docs/comm.md's "Traffic by link"; the CommStats of the gloo backend count the
// same thing (GlooOptions::node_of_rank), and the tests compare the two.
//
// Every collective here is a ring (docs/comm.md): in a group of n, rank g sends only to its
// successor g+1 mod n, so all its bytes in that group cross a node boundary exactly when the
// successor runs on another node, and none otherwise. With block placement (node = rank /
// ranks_per_node) the world ring crosses at the last rank of every node; a hybrid shard group
// of ranks_per_node consecutive ranks stays inside one node; a replicate group (one rank per
// node) crosses at every hop.
//
// Assumes what the sharding tests measure: one micro-step per step (no gradient accumulation),
// reshard_after_forward, no parameter persistence or reuse (gather_scheduler.h) and the padded
// units of the plan (shard_plan.h). Small host collectives (loss, norm, statistics: a few hundred
// bytes) are left out.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/param_specs.h"
#include "engine/shard/shard_plan.h"

namespace accel::shard {

// node_of_rank for `world` ranks placed in blocks of `ranks_per_node` (torchrun, Slurm's block
// distribution): rank r on node r / ranks_per_node. ranks_per_node < 1 counts as 1.
std::vector<int> BlockPlacement(int world, int ranks_per_node);

// World ranks of the groups `rank` belongs to, in group-rank order (process_groups.h): its hybrid
// shard group (group_size consecutive ranks) and its replicate group (the ranks at the same
// position in every shard group).
std::vector<int> ShardGroupMembers(int rank, int group_size);
std::vector<int> ReplicateGroupMembers(int rank, int world, int group_size);

struct RingTraffic {
  int64_t sent = 0;             // bytes this rank sends in one step
  int64_t sent_cross_node = 0;  // of which to ranks on another node
};

// Rank `rank`'s traffic per step for `options` (strategy, hybrid_group_size, param_dtype for
// all-gathers, reduce_dtype for reductions) on `world` ranks placed by `node_of_rank` (indexed
// by world rank; empty: one node). InvalidArgument for a rank outside the world, a placement
// of the wrong size or a hybrid group size that does not divide the world.
[[nodiscard]] absl::StatusOr<RingTraffic> RingTrafficPerStep(const model::ModelLayout& layout,
                                                             const ShardOptions& options, int world,
                                                             const std::vector<int>& node_of_rank,
                                                             int rank);

// The sum over every rank of the world.
[[nodiscard]] absl::StatusOr<RingTraffic> RingTrafficPerStepAllRanks(
    const model::ModelLayout& layout, const ShardOptions& options, int world,
    const std::vector<int>& node_of_rank);

}  // namespace accel::shard
