// GangRunner (a "launcher"): starts and stops the worker processes of a job attempt (one per
// rank) and reports how they end. Supervisor is the local one (fork/exec on acceld's host);
// SlurmLauncher (sbatch + srun) and KubernetesLauncher (an Indexed Job + headless Service) place
// the ranks on other machines through the cluster's own scheduler. JobManager's tests use a fake.
#pragma once

#include <signal.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace accel::server {

// The worker contract for "checkpoint, then stop" (worker/daemon.h has the same numbers):
// acceld sends kWorkerCheckpointSignal to each rank; a rank that saved a checkpoint on request
// exits with kWorkerExitCheckpointed.
inline constexpr int kWorkerCheckpointSignal = SIGUSR1;
inline constexpr int kWorkerExitCheckpointed = 3;

struct RankLaunch {
  int rank = 0;
  std::vector<std::string> argv;  // argv[0] is the program path
  std::vector<std::string> env;   // the complete environment, "KEY=VALUE"
  std::string log_path;           // stdout and stderr go here (appended)
};

// How a gang's ranks are laid out over machines. The local launcher runs every rank on acceld's
// host (nodes == 1). slurm and kubernetes place `nodes` machines with `ranks_per_node` ranks
// each; rank = node * ranks_per_node + local rank (block order, as torchrun and Slurm's default
// distribution number them), so HYBRID_SHARD's shard groups are the machines.
struct GangShape {
  int nodes = 1;
  int ranks_per_node = 1;
  std::string device = "cpu";  // "cuda": one GPU per rank
};

struct GangLaunch {
  std::string job_id;
  int attempt = 0;
  // Rank r's complete command, environment and log (the local launcher uses these as they are).
  std::vector<RankLaunch> ranks;
  GangShape shape;
  // For launchers that start ranks elsewhere: the command every rank runs (argv[0] the worker's
  // path on the compute nodes), the variables every rank shares ("K=V": ACCEL_JOB_ID,
  // ACCEL_ATTEMPT, ACCEL_COORDINATOR, OMP_NUM_THREADS, ...; never RANK, LOCAL_RANK or the token,
  // which the worker takes from the launcher's own variables and the launcher's secret), the
  // attempt's worker token (ACCEL_WORKER_TOKEN in the worker: a Secret on Kubernetes, a 0600
  // file on the shared filesystem under Slurm), and where rank r's output goes:
  // <log_dir>/rank-<r>.log (on a filesystem acceld and the nodes share).
  std::vector<std::string> worker_argv;
  std::vector<std::string> shared_env;
  std::string token;
  std::string log_dir;
  // The job file's launcher settings (resources.slurm.partition, resources.kubernetes.image,
  // ...), by key without the prefix ("partition", "image"); they override acceld's flags.
  std::map<std::string, std::string> settings;
};

struct RankExit {
  std::string job_id;
  int attempt = 0;
  int rank = 0;
  int exit_code = 0;  // meaningful when signal == 0
  int signal = 0;     // the signal that killed it, or 0
  std::string log_tail;  // the last lines it printed
  bool ok() const { return signal == 0 && exit_code == 0; }
  bool checkpointed() const { return signal == 0 && exit_code == kWorkerExitCheckpointed; }
  std::string Describe() const;  // "exited with code 3" / "killed by signal 9 (Killed)"
};

struct RankLogLine {
  std::string job_id;
  int attempt = 0;
  int rank = 0;
  std::string line;
};

struct PollResult {
  std::vector<RankExit> exits;
  std::vector<RankLogLine> lines;
};

class GangRunner {
 public:
  virtual ~GangRunner() = default;
  // Starts every rank or none (on error the started ones are killed and reaped). Returns the
  // cluster's name for the attempt ("slurm job 4711", "kubernetes job accel-job-3-a1"), kept in
  // the attempt record and shown by `accelctl status`; "" for the local launcher.
  [[nodiscard]] virtual absl::StatusOr<std::string> Launch(const GangLaunch& gang) = 0;
  // Whether the cluster has accepted the attempt but not started its ranks yet (queued in
  // Slurm, pods not scheduled): JobManager runs no registration deadline meanwhile.
  virtual bool Pending(const std::string& job_id, int attempt) const { return false; }
  // Stops what an earlier acceld started for an attempt, by the name Launch returned (a Slurm
  // job outlives the acceld that submitted it; local ranks died with it). Best effort.
  virtual void Forget(const std::string& placement) {}
  // Whether a job's launcher settings (GangLaunch::settings) with acceld's own can launch:
  // checked at submit, so a job that could never start is refused at the door, naming the key.
  [[nodiscard]] virtual absl::Status CheckSettings(
      const std::map<std::string, std::string>& settings) const {
    return absl::OkStatus();
  }
  // SIGTERM to every live rank of the attempt (to its process group), SIGKILL after `grace`.
  // Exits are reported by Poll like any other.
  virtual void Stop(const std::string& job_id, int attempt, absl::Duration grace) = 0;
  // kWorkerCheckpointSignal to every live rank of the attempt (the process itself, not its
  // group), not yet stopped. The ranks then checkpoint and exit by themselves; Stop still
  // applies to any that do not.
  virtual void RequestCheckpoint(const std::string& job_id, int attempt) = 0;
  // Reaps what has ended, enforces stop deadlines, collects new output lines.
  virtual PollResult Poll() = 0;
  // Live ranks of all attempts.
  virtual int live() const = 0;
};

}  // namespace accel::server
