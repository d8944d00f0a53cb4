#include "engine/shard/ring_traffic.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/comm/ring_algorithms.h"

namespace accel::shard {
namespace {

// What one rank sends in one group, and whether its ring successor is on another node.
struct GroupTraffic {
  int64_t sent = 0;
  bool crosses = false;
};

// Rank g's bytes in a ring all-reduce of `count` elements over n ranks, ragged chunks as the
// communicator lays them out (PaddedLayout): the reduce-scatter sends every chunk but g, the
// all-gather every chunk but g+1.
int64_t AllReduceSent(int64_t count, int n, int g, int64_t esize) {
  if (n < 2) return 0;
  const comm::ChunkLayout layout = comm::PaddedLayout(static_cast<size_t>(count), n);
  const int64_t own = static_cast<int64_t>(layout.Length(g));
  const int64_t next = static_cast<int64_t>(layout.Length((g + 1) % n));
  return (2 * count - own - next) * esize;
}

bool SuccessorCrosses(const std::vector<int>& members, int g,
                      const std::vector<int>& node_of_rank) {
  if (node_of_rank.empty() || members.size() < 2) return false;
  const int next = members[(g + 1) % members.size()];
  return node_of_rank[next] != node_of_rank[members[g]];
}

}  // namespace

std::vector<int> BlockPlacement(int world, int ranks_per_node) {
  const int per_node = std::max(1, ranks_per_node);
  std::vector<int> nodes(static_cast<size_t>(std::max(0, world)));
  for (int r = 0; r < world; ++r) nodes[r] = r / per_node;
  return nodes;
}

std::vector<int> ShardGroupMembers(int rank, int group_size) {
  std::vector<int> members;
  for (int i = 0; i < group_size; ++i) members.push_back(rank / group_size * group_size + i);
  return members;
}

std::vector<int> ReplicateGroupMembers(int rank, int world, int group_size) {
  std::vector<int> members;
  for (int j = 0; j < world / group_size; ++j)
    members.push_back(j * group_size + rank % group_size);
  return members;
}

absl::StatusOr<RingTraffic> RingTrafficPerStep(const model::ModelLayout& layout,
                                               const ShardOptions& options, int world,
                                               const std::vector<int>& node_of_rank, int rank) {
  if (world < 1 || rank < 0 || rank >= world) {
    return absl::InvalidArgumentError(absl::StrCat("ring traffic: rank ", rank, " of ", world));
  }
  if (!node_of_rank.empty() && static_cast<int>(node_of_rank.size()) != world) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ring traffic: placement of ", node_of_rank.size(), " ranks for a world of ", world));
  }
  const bool hybrid = IsHybrid(options.strategy);
  const int S = hybrid ? options.hybrid_group_size : world;  // the shard group's size
  if (S < 1 || world % S != 0) {
    return absl::InvalidArgumentError(absl::StrCat("ring traffic: hybrid group size ", S,
                                                   " does not divide the world of ", world));
  }
  // Non-hybrid plans shard over the world: the group of all `world` ranks from 0.
  const std::vector<int> members = ShardGroupMembers(hybrid ? rank : 0, S);
  const int g = rank % S;
  const int64_t pbytes = static_cast<int64_t>(DTypeSize(options.param_dtype));
  const int64_t gbytes = static_cast<int64_t>(DTypeSize(options.reduce_dtype));

  GroupTraffic shard{0, SuccessorCrosses(members, g, node_of_rank)};
  GroupTraffic replicate;
  if (hybrid) {
    replicate.crosses =
        SuccessorCrosses(ReplicateGroupMembers(rank, world, S), rank / S, node_of_rank);
  }
  for (int u = 0; u < layout.num_units(); ++u) {
    const int64_t numel = layout.unit(u).numel;
    const int64_t padded = (numel + S - 1) / S * S;
    const int64_t chunk = padded / S;      // one rank's shard of the unit
    const int64_t ring = (S - 1) * chunk;  // elements a rank sends in a ring AG or RS of the unit
    switch (options.strategy) {
      case Strategy::kNoShard:
        // The boundary all-reduce of the padded unit (even chunks).
        shard.sent += AllReduceSent(padded, S, g, gbytes);
        break;
      case Strategy::kShardOptimizer:
      case Strategy::kShardGradOp:
      case Strategy::kHybridShardZero2:
        // Reduce-scatter of the gradients, all-gather of the updated parameters.
        shard.sent += ring * (gbytes + pbytes);
        break;
      case Strategy::kFullShard:
      case Strategy::kHybridShard:
        // Blocks are gathered for forward and again for backward, the root (kept through the
        // step, as FSDP's root is) once; every unit's gradient is reduce-scattered once.
        shard.sent += ring * ((u == 0 ? 1 : 2) * pbytes + gbytes);
        break;
    }
    if (hybrid) {
      const int R = world / S;
      replicate.sent += AllReduceSent(chunk, R, rank / S, gbytes);
    }
  }
  RingTraffic t;
  t.sent = shard.sent + replicate.sent;
  t.sent_cross_node = (shard.crosses ? shard.sent : 0) + (replicate.crosses ? replicate.sent : 0);
  return t;
}

absl::StatusOr<RingTraffic> RingTrafficPerStepAllRanks(const model::ModelLayout& layout,
                                                       const ShardOptions& options, int world,
                                                       const std::vector<int>& node_of_rank) {
  RingTraffic total;
  for (int r = 0; r < world; ++r) {
    absl::StatusOr<RingTraffic> t = RingTrafficPerStep(layout, options, world, node_of_rank, r);
    if (!t.ok()) return t.status();
    total.sent += t->sent;
    total.sent_cross_node += t->sent_cross_node;
  }
  return total;
}

}  // namespace accel::shard
