#include "worker/launch_env.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "worker/slurm_lists.h"

extern char** environ;

namespace accel::worker {
namespace {

absl::Status Bad(std::string_view name, std::string_view value, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(name), "=", std::string(value), " ", std::string(why)));
}

const std::string* Find(const LaunchVars& vars, const char* name) {
  auto it = vars.find(name);
  return it == vars.end() || it->second.empty() ? nullptr : &it->second;
}

// nullopt when unset or empty; InvalidArgument when not a non-negative integer.
absl::StatusOr<std::optional<int>> OptInt(const LaunchVars& vars, const char* name) {
  const std::string* v = Find(vars, name);
  if (v == nullptr) return std::optional<int>();
  int out = 0;
  if (!absl::SimpleAtoi(*v, &out)) return Bad(name, *v, "is not an integer");
  if (out < 0) return Bad(name, *v, "is negative");
  return std::optional<int>(out);
}

absl::StatusOr<int> NeedInt(const LaunchVars& vars, const char* name, std::string_view why) {
  ACCEL_ASSIGN_OR_RETURN(std::optional<int> v, OptInt(vars, name));
  if (!v.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " is not set (", std::string(why), ")"));
  }
  return *v;
}

absl::StatusOr<int> Port(const LaunchVars& vars) {
  const std::string* v = Find(vars, "MASTER_PORT");
  if (v == nullptr) return kDefaultMasterPort;
  int port = 0;
  if (!absl::SimpleAtoi(*v, &port) || port < 1 || port > 65535) {
    return Bad("MASTER_PORT", *v, "is not a port number (1-65535)");
  }
  return port;
}

// `what` names the counts ("RANK=5 is outside WORLD_SIZE=4").
absl::Status Below(std::string_view name, int value, std::string_view limit_name, int limit) {
  if (value < limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(std::string(name), "=", value, " is outside ",
                                                 std::string(limit_name), "=", limit));
}

// The shape's invariants, every name as its source spells it.
struct Names {
  const char* rank;
  const char* local_rank;
  const char* world;
  const char* local_world;
  const char* node_rank;
  const char* nodes;
  bool rank_derived = false;
};

absl::Status Check(const LaunchEnv& e, const Names& n) {
  if (e.world_size < 1) return Bad(n.world, std::to_string(e.world_size), "must be at least 1");
  if (e.local_world_size < 1) {
    return Bad(n.local_world, std::to_string(e.local_world_size), "must be at least 1");
  }
  if (e.num_nodes < 1) return Bad(n.nodes, std::to_string(e.num_nodes), "must be at least 1");
  // A rank given (torchrun, Slurm) is checked first; a derived one (Kubernetes, a config) is
  // out of range because one of its parts is, which is checked first then.
  if (!n.rank_derived) ACCEL_RETURN_IF_ERROR(Below(n.rank, e.rank, n.world, e.world_size));
  ACCEL_RETURN_IF_ERROR(Below(n.local_rank, e.local_rank, n.local_world, e.local_world_size));
  ACCEL_RETURN_IF_ERROR(Below(n.node_rank, e.node_rank, n.nodes, e.num_nodes));
  ACCEL_RETURN_IF_ERROR(Below(n.rank, e.rank, n.world, e.world_size));
  if (e.world_size != e.num_nodes * e.local_world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        n.world, "=", e.world_size, " is not ", n.nodes, "=", e.num_nodes, " nodes of ",
        n.local_world, "=", e.local_world_size, " ranks (ranks must divide evenly over nodes)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<LaunchEnv> FromTorchrun(const LaunchVars& vars) {
  LaunchEnv e;
  e.source = "torchrun";
  ACCEL_ASSIGN_OR_RETURN(e.rank, NeedInt(vars, "RANK", ""));
  ACCEL_ASSIGN_OR_RETURN(e.world_size, NeedInt(vars, "WORLD_SIZE", "RANK is set"));
  ACCEL_ASSIGN_OR_RETURN(std::optional<int> local_world, OptInt(vars, "LOCAL_WORLD_SIZE"));
  e.local_world_size = local_world.value_or(e.world_size);
  if (e.local_world_size < 1) {
    return Bad("LOCAL_WORLD_SIZE", std::to_string(e.local_world_size), "must be at least 1");
  }
  ACCEL_ASSIGN_OR_RETURN(std::optional<int> local_rank, OptInt(vars, "LOCAL_RANK"));
  ACCEL_ASSIGN_OR_RETURN(std::optional<int> group_rank, OptInt(vars, "GROUP_RANK"));
  e.local_rank = local_rank.value_or(e.rank % e.local_world_size);
  e.node_rank = group_rank.value_or(e.rank / e.local_world_size);
  e.num_nodes = std::max(1, e.world_size / e.local_world_size);
  if (e.world_size % e.local_world_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("WORLD_SIZE=", e.world_size,
                                                   " is not divisible by LOCAL_WORLD_SIZE=",
                                                   e.local_world_size));
  }
  if (const std::string* a = Find(vars, "MASTER_ADDR")) e.master_addr = *a;
  ACCEL_ASSIGN_OR_RETURN(e.master_port, Port(vars));
  ACCEL_RETURN_IF_ERROR(Check(e, {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                  "GROUP_RANK", "WORLD_SIZE/LOCAL_WORLD_SIZE"}));
  return e;
}

absl::StatusOr<LaunchEnv> FromSlurm(const LaunchVars& vars) {
  LaunchEnv e;
  e.source = "slurm";
  const char* why = "srun sets it for every task";
  ACCEL_ASSIGN_OR_RETURN(e.rank, NeedInt(vars, "SLURM_PROCID", why));
  ACCEL_ASSIGN_OR_RETURN(e.local_rank, NeedInt(vars, "SLURM_LOCALID", why));
  ACCEL_ASSIGN_OR_RETURN(e.world_size, NeedInt(vars, "SLURM_NTASKS", why));
  ACCEL_ASSIGN_OR_RETURN(e.node_rank, NeedInt(vars, "SLURM_NODEID", why));
  ACCEL_ASSIGN_OR_RETURN(e.num_nodes, NeedInt(vars, "SLURM_NNODES", why));
  const char* per_node_name = Find(vars, "SLURM_STEP_TASKS_PER_NODE") != nullptr
                                  ? "SLURM_STEP_TASKS_PER_NODE"
                                  : "SLURM_TASKS_PER_NODE";
  const std::string* per_node = Find(vars, per_node_name);
  if (per_node == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SLURM_STEP_TASKS_PER_NODE and SLURM_TASKS_PER_NODE are not set (", why, ")"));
  }
  ACCEL_ASSIGN_OR_RETURN(std::vector<int> counts, ExpandTasksPerNode(*per_node, per_node_name));
  if (static_cast<int>(counts.size()) != e.num_nodes) {
    return Bad(per_node_name, *per_node,
               absl::StrCat("lists ", counts.size(), " nodes, SLURM_NNODES=", e.num_nodes));
  }
  if (std::any_of(counts.begin(), counts.end(), [&](int c) { return c != counts[0]; })) {
    return Bad(per_node_name, *per_node,
               "spreads the ranks unevenly (every node must run as many ranks: give "
               "--ntasks-per-node)");
  }
  e.local_world_size = counts[0];
  if (const std::string* a = Find(vars, "MASTER_ADDR")) {
    e.master_addr = *a;
  } else {
    for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      const std::string* list = Find(vars, name);
      if (list == nullptr) continue;
      ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> hosts, ExpandHostList(*list, name));
      if (!hosts.empty()) e.master_addr = hosts[0];
      break;
    }
  }
  ACCEL_ASSIGN_OR_RETURN(e.master_port, Port(vars));
  ACCEL_RETURN_IF_ERROR(Check(e, {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", per_node_name,
                                  "SLURM_NODEID", "SLURM_NNODES"}));
  return e;
}

absl::StatusOr<LaunchEnv> FromKubernetes(const LaunchVars& vars) {
  LaunchEnv e;
  e.source = "kubernetes";
  const char* why = "acceld's Kubernetes renderer sets it";
  ACCEL_ASSIGN_OR_RETURN(e.node_rank, NeedInt(vars, "JOB_COMPLETION_INDEX", ""));
  ACCEL_ASSIGN_OR_RETURN(e.num_nodes, NeedInt(vars, "ACCEL_NODES", why));
  ACCEL_ASSIGN_OR_RETURN(e.local_world_size, NeedInt(vars, "ACCEL_RANKS_PER_NODE", why));
  ACCEL_ASSIGN_OR_RETURN(std::optional<int> local_rank, OptInt(vars, "LOCAL_RANK"));
  if (!local_rank.has_value() && e.local_world_size > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LOCAL_RANK is not set with ACCEL_RANKS_PER_NODE=", e.local_world_size,
        " (run the pod's ranks with accel-worker --nproc-per-node)"));
  }
  e.local_rank = local_rank.value_or(0);
  e.world_size = e.num_nodes * e.local_world_size;
  e.rank = e.node_rank * e.local_world_size + e.local_rank;
  if (const std::string* a = Find(vars, "MASTER_ADDR")) e.master_addr = *a;
  ACCEL_ASSIGN_OR_RETURN(e.master_port, Port(vars));
  ACCEL_RETURN_IF_ERROR(Check(e, {"rank", "LOCAL_RANK", "world", "ACCEL_RANKS_PER_NODE",
                                  "JOB_COMPLETION_INDEX", "ACCEL_NODES", true}));
  return e;
}

absl::StatusOr<LaunchEnv> FromAccelerateConfig(const LaunchVars& vars, const MultiNodeKeys& c) {
  LaunchEnv e;
  e.source = "accelerate config";
  const std::string file = c.file.empty() ? "accelerate config" : c.file;
  if (c.rdzv_backend != "" && c.rdzv_backend != "static" && c.rdzv_backend != "c10d") {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": rdzv_backend: \"", c.rdzv_backend,
        "\" is not supported (static and c10d both meet at rank 0's store)"));
  }
  if (c.num_processes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": num_processes is not set (with num_machines: ", c.num_machines,
        " it is the total number of ranks)"));
  }
  if (c.num_processes % c.num_machines != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": num_processes ", c.num_processes, " is not divisible by num_machines ",
        c.num_machines));
  }
  e.world_size = c.num_processes;
  e.num_nodes = c.num_machines;
  e.node_rank = c.machine_rank;
  e.local_world_size = c.num_processes / c.num_machines;
  ACCEL_ASSIGN_OR_RETURN(std::optional<int> local_rank, OptInt(vars, "LOCAL_RANK"));
  e.local_rank = local_rank.value_or(0);
  e.rank = e.node_rank * e.local_world_size + e.local_rank;
  if (const std::string* a = Find(vars, "MASTER_ADDR")) {
    e.master_addr = *a;
  } else {
    e.master_addr = c.main_process_ip;
  }
  if (Find(vars, "MASTER_PORT") == nullptr && c.main_process_port > 0) {
    e.master_port = c.main_process_port;
  } else {
    ACCEL_ASSIGN_OR_RETURN(e.master_port, Port(vars));
  }
  const std::string np = absl::StrCat(file, ": num_processes"),
                    nm = absl::StrCat(file, ": num_machines"),
                    mr = absl::StrCat(file, ": machine_rank");
  ACCEL_RETURN_IF_ERROR(Check(e, {"rank", "LOCAL_RANK", np.c_str(), "num_processes/num_machines",
                                  mr.c_str(), nm.c_str(), true}));
  return e;
}

}  // namespace

LaunchVars ProcessLaunchVars() {
  LaunchVars vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return vars;
}

absl::StatusOr<LaunchEnv> ResolveLaunchEnv(const LaunchVars& vars,
                                           const std::optional<MultiNodeKeys>& config) {
  if (Find(vars, "RANK") != nullptr) return FromTorchrun(vars);
  if (Find(vars, "SLURM_PROCID") != nullptr) return FromSlurm(vars);
  if (Find(vars, "JOB_COMPLETION_INDEX") != nullptr) return FromKubernetes(vars);
  if (config.has_value() && config->num_machines > 1) return FromAccelerateConfig(vars, *config);
  LaunchEnv single;
  if (const std::string* a = Find(vars, "MASTER_ADDR")) single.master_addr = *a;
  ACCEL_ASSIGN_OR_RETURN(single.master_port, Port(vars));
  return single;
}

std::string DescribeLaunchEnv(const LaunchEnv& e) {
  std::string out = absl::StrCat("rank ", e.rank, " of ", e.world_size, " (node ", e.node_rank,
                                 " of ", e.num_nodes, ", local rank ", e.local_rank, " of ",
                                 e.local_world_size, ") from ", e.source);
  if (!e.master_addr.empty()) {
    absl::StrAppend(&out, "; rank 0's store at ", e.master_addr, ":", e.master_port);
  }
  return out;
}

}  // namespace accel::worker
