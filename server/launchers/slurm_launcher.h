// SlurmLauncher: the GangRunner that places a gang through Slurm. Launch writes the attempt's
// batch script and token file under its log dir (a filesystem acceld and the nodes share) and
// submits it with `sbatch --parsable`; the script `srun`s one accel-worker per task, which
// takes its rank from SLURM_PROCID and reaches acceld over TCP with the token. Poll asks
// `scontrol show job -o` about each live attempt (at most every poll_interval), tails the ranks'
// rank-<r>.log files, and when the Slurm job has ended reports every rank's exit: srun's own
// lines name the tasks that failed ("task 1: Killed"); the rest exited 0 when the job
// COMPLETED, else were stopped with it (SIGTERM). Stop is `scancel` (Slurm's SIGTERM, KillWait,
// SIGKILL), RequestCheckpoint `scancel --signal=USR1` to the tasks, Forget `scancel` by name.
// The destructor scancels what is still live, so no Slurm job outlives acceld's shutdown.
//
// Threading: like Supervisor, called from JobManager's control loop only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "server/launchers/command.h"
#include "server/core/gang_runner.h"
#include "server/launchers/log_tail.h"
#include "server/launchers/slurm_script.h"

namespace accel::server {

class SlurmLauncher final : public GangRunner {
 public:
  // `run` answers for sbatch, scontrol and scancel (RunCommand when unset). Does not own clock.
  SlurmLauncher(SlurmOptions options, Clock* clock, CommandRunner run = nullptr);
  ~SlurmLauncher() override;

  [[nodiscard]] absl::StatusOr<std::string> Launch(const GangLaunch& gang) override;
  void Stop(const std::string& job_id, int attempt, absl::Duration grace) override;
  void RequestCheckpoint(const std::string& job_id, int attempt) override;
  PollResult Poll() override;
  int live() const override;
  bool Pending(const std::string& job_id, int attempt) const override;
  void Forget(const std::string& placement) override;

  // The Slurm config sbatch, scontrol and scancel will read: `slurm_conf` ($SLURM_CONF; null or
  // empty when unset), else `default_path`. Without one, Slurm's clients look for a controller
  // through DNS SRV records (configless mode) and reach for the network from wherever acceld
  // runs, so acceld refuses to start the slurm launcher instead: FailedPrecondition naming what
  // was looked for. Returns the config's path.
  static constexpr char kDefaultConfig[] = "/etc/slurm/slurm.conf";
  [[nodiscard]] static absl::StatusOr<std::string> FindConfig(
      const char* slurm_conf, const std::string& default_path = kDefaultConfig);

  // "slurm job 4711" <-> "4711".
  static std::string PlacementOf(const std::string& slurm_job_id);
  static std::string SlurmJobIdOf(const std::string& placement);

 private:
  struct Attempt {
    std::string job_id;
    int attempt = 0;
    std::string slurm_id;
    std::string log_dir;
    int ranks = 0;
    SlurmJobStatus status;  // as last seen
    bool stopped = false;
    int64_t next_poll_us = 0;
    std::vector<std::unique_ptr<LogTail>> logs;  // by rank
  };
  // Runs a Slurm command; logs and returns false when it cannot be run or exits non-zero.
  bool Slurm(const std::vector<std::string>& argv, std::string* out = nullptr);
  void Ended(Attempt& a, PollResult& out);
  Attempt* Find(const std::string& job_id, int attempt);
  const Attempt* Find(const std::string& job_id, int attempt) const;

  const SlurmOptions options_;
  Clock* const clock_;
  const CommandRunner run_;
  std::map<std::string, Attempt> attempts_;  // live ones, by Slurm job id
  std::vector<RankExit> deferred_;           // reported by the next Poll
};

}  // namespace accel::server
