// `accel-worker --nproc-per-node K ...`: one process per node (a Kubernetes pod, one Slurm task
// per node, or by hand) that runs the node's K ranks, as torchrun does. It finds the node's
// place with worker/launch_env.h (a pod's JOB_COMPLETION_INDEX, ACCEL_NODES; Slurm's
// SLURM_NODEID, SLURM_NNODES with one task per node; an Accelerate config's machine_rank; or a
// single node), then starts K copies of itself, without --nproc-per-node, with torchrun's
// variables: LOCAL_RANK=i, RANK=node_rank*K+i, WORLD_SIZE=nodes*K, LOCAL_WORLD_SIZE=K,
// GROUP_RANK=node_rank, MASTER_ADDR / MASTER_PORT as resolved.
//
// Supervision: SIGTERM, SIGINT and SIGUSR1 (acceld's checkpoint request) are forwarded to every
// rank. When a rank fails (an exit other than 0 or kExitCheckpointed, or a signal), the others
// get SIGTERM and, after a grace period, SIGKILL; the launcher exits with the first failure's
// code (128 + signal for a signal). Otherwise it exits kExitCheckpointed if a rank did, else 0.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "worker/launch_env.h"

namespace accel::worker {

// The K ranks' variables (to set on top of the node's environment). InvalidArgument when this
// process is a rank already (RANK is set), when K < 1, or when the node's source disagrees with
// K (ACCEL_RANKS_PER_NODE, an Accelerate config's processes per machine, several Slurm tasks on
// this node).
[[nodiscard]] absl::StatusOr<std::vector<LaunchVars>> NodeRankVars(
    const LaunchVars& vars, int nproc, const std::optional<MultiNodeKeys>& config = std::nullopt);

// argv without "--nproc-per-node K" / "--nproc-per-node=K".
std::vector<std::string> RankArgv(const std::vector<std::string>& argv);

// Starts the ranks (this executable, RankArgv(argv), each with its NodeRankVars added to this
// environment) and supervises them as described above; returns the exit code. Call from the
// main thread before any other thread exists.
int RunNodeLauncher(const std::vector<std::string>& argv, const std::vector<LaunchVars>& ranks,
                    absl::Duration grace = absl::Seconds(10));

}  // namespace accel::worker
