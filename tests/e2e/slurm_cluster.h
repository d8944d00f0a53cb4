// Test helper: a real Slurm cluster on this one machine (reference: shared/reference/slurm.md,
// "Option B"). Up() starts a private munged (own key and socket), slurmctld on the bridge
// address of a NetnsLab (tests/e2e/netns.h) and one slurmd per node, each in its own network
// namespace with its own address, so `srun -N2` places tasks on two "machines" that talk TCP
// across the bridge like real ones.
//
// Everything is unique to the instance, so two tests may run clusters at once (ctest -j2): the
// lab's subnet and interface names, the cluster and node names ("<tag>n1", tag from the pid and
// a counter), slurmctld's port (a free one; slurmd's 6818 is per namespace), the state, spool,
// log and munge directories (under the given base directory), and the /etc/hosts lines that
// make node names resolve (each ends with "# accel-slurm-<tag>"; a task's MASTER_ADDR is the
// first node's name, as worker/launch_env.h takes it from the node list).
//
// Every wait is bounded (scaled by TimeScale()). Down() — also run by the destructor and by a
// failed Up() — cancels every job of the cluster, stops the daemons (SIGTERM, then SIGKILL
// after a bounded wait), kills whatever still runs in the nodes' namespaces, deletes the lab
// and removes the /etc/hosts lines: nothing is left behind.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tests/e2e/netns.h"
#include "tests/e2e/process.h"

namespace accel::testing {

class SlurmCluster {
 public:
  // Why this machine cannot run a cluster (not root, a Slurm or munge binary missing, no
  // network namespaces), or "" when it can.
  static std::string SkipReason();

  // `base` is a fresh scratch directory the cluster owns.
  explicit SlurmCluster(std::string base);
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // Brings up `nodes` nodes of `cpus_per_node` CPUs each (more than the machine has is allowed:
  // SlurmdParameters=config_overrides) and waits until all are idle. On failure the error
  // names the step and the daemon's log tail, and everything started is stopped again.
  absl::Status Up(int nodes, int cpus_per_node);
  void Down();

  // "SLURM_CONF=<base>/etc/slurm.conf": the variables a Slurm client needs (tasks inherit it).
  std::vector<std::string> env() const;
  int nodes() const { return static_cast<int>(node_names_.size()); }
  const std::string& node_name(int i) const { return node_names_[i]; }
  const std::string& node_address(int i) const { return lab_->address(i); }
  // The root namespace's address on the nodes' bridge (where slurmctld, and a test's acceld,
  // listen for the nodes).
  const std::string& bridge_address() const { return lab_->bridge_address(); }
  std::string netns_path(int i) const { return lab_->netns_path(i); }  // "/run/netns/NAME"
  const std::string& base() const { return base_; }

  // Runs a Slurm client (`srun`, `squeue`, ...) with env() and waits up to timeout_s; the exit
  // status (-1 on timeout, the client then killed) and stdout + stderr.
  struct Result {
    int status = -1;
    std::string output;
  };
  Result Client(const std::vector<std::string>& argv, double timeout_s) const;
  // Starts a client in the background (output in <base>/log/<name>.out/.err).
  ChildProcess StartClient(const std::vector<std::string>& argv, const std::string& name) const;

  // Job ids squeue lists for this cluster (empty when none or when squeue fails).
  std::vector<std::string> Jobs() const;
  // Pids of the processes in the nodes' namespaces other than slurmd (tasks, slurmstepd).
  std::vector<pid_t> TaskProcesses() const;

 private:
  absl::Status WriteConfig(int cpus_per_node, int port);
  absl::Status WaitFor(const std::string& what, double timeout_s,
                       const std::function<bool()>& ready, const std::string& log) const;
  void AddHosts();
  void RemoveHosts();
  std::vector<std::string> WithEnv(const std::vector<std::string>& argv) const;

  std::string base_, tag_, conf_, munge_socket_;
  std::unique_ptr<NetnsLab> lab_;
  std::vector<std::string> node_names_;
  std::vector<ChildProcess> daemons_;  // munged, slurmctld, slurmd...
  std::vector<pid_t> slurmd_pids_;
  bool hosts_added_ = false;
  mutable int client_count_ = 0;
};

}  // namespace accel::testing
