// Where this rank sits in its gang, from whatever placed it: one resolution for both worker
// modes (standalone and daemon) and every launcher.
//
// Sources, first match wins:
//   "torchrun"          RANK is set: RANK, WORLD_SIZE (required), LOCAL_RANK, LOCAL_WORLD_SIZE,
//                       GROUP_RANK, MASTER_ADDR, MASTER_PORT. Without LOCAL_WORLD_SIZE the
//                       gang is taken to be on one machine (LOCAL_WORLD_SIZE = WORLD_SIZE), as
//                       when RANK and WORLD_SIZE are set by hand; LOCAL_RANK then defaults to
//                       RANK % LOCAL_WORLD_SIZE, GROUP_RANK to RANK / LOCAL_WORLD_SIZE.
//   "slurm"             SLURM_PROCID is set (srun): SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS,
//                       SLURM_NODEID, SLURM_NNODES, and the ranks per node from
//                       SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE) in Slurm's
//                       compressed form "2(x2),1". SLURM_NTASKS_PER_NODE is NOT read: an inner
//                       srun inherits the batch job's value, which need not be the step's.
//                       MASTER_ADDR, when unset, is the first host of SLURM_STEP_NODELIST (else
//                       SLURM_JOB_NODELIST, SLURM_NODELIST) — where task 0 runs — as a name;
//                       the rendezvous resolves it.
//   "kubernetes"        JOB_COMPLETION_INDEX is set (an Indexed Job's pod): it is the node rank;
//                       ACCEL_NODES and ACCEL_RANKS_PER_NODE (set by acceld's renderer) give the
//                       shape, LOCAL_RANK the rank within the pod (0 when one rank per pod).
//   "accelerate config" none of the above, and the Accelerate config says num_machines > 1:
//                       machine_rank is the node rank, num_processes / num_machines the ranks
//                       per node, main_process_ip / main_process_port rank 0's store, LOCAL_RANK
//                       the rank within the machine (0 when unset). rdzv_backend static and
//                       c10d both mean "meet at rank 0's store"; same_network is informational.
//   "none"              a single process: rank 0 of 1.
// MASTER_PORT defaults to 29500 (torchrun's default) wherever it is unset; MASTER_ADDR, when
// set, wins over the node list and over main_process_ip. master_addr may stay empty (daemon
// workers meet through acceld, not MASTER_ADDR).
//
// Errors are InvalidArgument, one line naming the variable or key and its value:
// "SLURM_PROCID=abc is not an integer", "RANK=4 is outside WORLD_SIZE=4", ...
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace accel::worker {

inline constexpr int kDefaultMasterPort = 29500;  // torchrun's

struct LaunchEnv {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int node_rank = 0;
  int num_nodes = 1;
  std::string master_addr;  // may be empty (see above)
  int master_port = kDefaultMasterPort;
  std::string source = "none";  // "torchrun" | "slurm" | "kubernetes" | "accelerate config" | "none"
};

// The multi-node keys of an Accelerate config (engine/config/accelerate_yaml.h), already
// range-checked by the YAML reader.
struct MultiNodeKeys {
  std::string file;  // for messages
  int num_processes = 0;  // 0: not given
  int num_machines = 1;
  int machine_rank = 0;
  std::string main_process_ip;
  int main_process_port = 0;  // 0: not given
  std::string rdzv_backend;   // "" | static | c10d | etcd | etcd-v2
};

using LaunchVars = std::map<std::string, std::string>;

// This process's environment as a map.
LaunchVars ProcessLaunchVars();

// The resolution above; `config` is the Accelerate config's keys when one was given.
[[nodiscard]] absl::StatusOr<LaunchEnv> ResolveLaunchEnv(
    const LaunchVars& vars, const std::optional<MultiNodeKeys>& config = std::nullopt);

// "rank 3 of 4 (node 1 of 2, local rank 1 of 2) from slurm; rank 0's store at n1:29500"
std::string DescribeLaunchEnv(const LaunchEnv& env);

}  // namespace accel::worker
