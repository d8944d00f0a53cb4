// The communicators a rank on a CUDA device needs for a sharding plan, over NCCL: the world
// group from the rendezvous store (rank 0's ncclUniqueId under "<prefix>/world"), and for
// hybrid plans the shard group (hybrid_group_size consecutive ranks) and the replicate group
// (the ranks at the same position in every shard group), split from the world with
// ncclCommSplit — the NCCL twin of CreateGlooProcessGroups (process_groups.h).
// Creation is collective: every rank of the world calls it with the same store, prefix and
// options, each on its own device (NCCL refuses two ranks of one communicator on one GPU).
// Errors: InvalidArgument when hybrid_group_size does not divide the world; the
// communicators' DeadlineExceeded / Unavailable naming the group and rank otherwise.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/comm/nccl_communicator.h"
#include "engine/comm/store.h"
#include "engine/shard/process_groups.h"

namespace accel::shard {

[[nodiscard]] absl::StatusOr<OwnedProcessGroups> CreateNcclProcessGroups(
    comm::Store* store, const std::string& prefix, int rank, int world, int device,
    const ShardOptions& options, const comm::NcclOptions& nccl = {});

}  // namespace accel::shard
