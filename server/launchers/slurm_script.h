// The Slurm side of the slurm launcher, as pure functions: the batch script acceld hands to
// sbatch for one attempt, and reading what Slurm says back (scontrol's job line, srun's task
// failure lines). server/launchers/slurm_launcher.h runs the commands.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/gang_runner.h"

namespace accel::server {

// acceld's defaults (--slurm-partition, ...); a job's resources.slurm.* win (GangLaunch::settings).
struct SlurmOptions {
  std::string partition;
  std::string account;
  std::string time;        // --time; empty: the partition's default
  std::string constraint;
  absl::Duration command_timeout = absl::Seconds(30);  // sbatch, scontrol, scancel
  absl::Duration poll_interval = absl::Seconds(1);     // how often a live attempt is looked at
};

// Where the launcher keeps an attempt's files, all under GangLaunch::log_dir (shared with the
// nodes): the script, the token (0600), srun's own output, and rank r's output.
std::string SlurmScriptPath(const GangLaunch& gang);
std::string SlurmTokenPath(const GangLaunch& gang);
std::string SlurmOutputPattern(const GangLaunch& gang);  // slurm-%j.out
std::string SlurmOutputPath(const std::string& log_dir, const std::string& slurm_job_id);
std::string RankLogPath(const std::string& log_dir, int rank);

// The batch script: #SBATCH lines for the gang's shape (--nodes, --ntasks-per-node,
// --gpus-per-task=1 for cuda, --no-requeue: acceld does the restarts), partition, account, time
// and constraint; the shared environment exported; the token read from its file; then one
// `srun --kill-on-bad-exit=1` of the worker, rank r's output in rank-<r>.log.
std::string RenderSlurmBatch(const GangLaunch& gang, const SlurmOptions& defaults);

// `scontrol show job -o <id>`'s line: the state (PENDING, RUNNING, COMPLETED, FAILED,
// CANCELLED, TIMEOUT, NODE_FAIL, ...) and ExitCode=<code>:<signal>.
struct SlurmJobStatus {
  std::string state;
  std::string reason;  // Reason=, e.g. NonZeroExitCode, launch failed requeued held
  int exit_code = 0;
  int signal = 0;
  bool ended() const;    // a final state
  bool pending() const;  // queued or being set up
};
[[nodiscard]] absl::StatusOr<SlurmJobStatus> ParseScontrolJob(const std::string& line);

// srun's lines about tasks that ended badly ("srun: error: n2: task 1: Killed",
// "srun: error: n1: tasks 0-1: Exited with exit code 3"), by rank: {exit code, signal}.
struct TaskEnd {
  int exit_code = 0;
  int signal = 0;
};
std::map<int, TaskEnd> ParseSrunTaskEnds(const std::string& output);

// `sbatch --parsable`'s answer ("4711" or "4711;cluster") -> "4711".
[[nodiscard]] absl::StatusOr<std::string> ParseSbatchJobId(const std::string& out);

}  // namespace accel::server
