// Supervisor: the GangRunner that fork/execs accel-worker processes. Each rank runs in its own
// process group (so a stop reaches anything it spawned), with PR_SET_PDEATHSIG=SIGKILL so it
// dies with acceld instead of being orphaned, and with stdout+stderr appended to its log file,
// which Poll tails into log lines.
//
// Threading: the kernel sends the parent-death signal when the *thread* that forked exits, so
// every call must come from one thread that lives as long as acceld (JobManager's control
// loop); the class is not thread-safe otherwise.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "server/core/gang_runner.h"
#include "server/launchers/log_tail.h"

namespace accel::server {

class Supervisor final : public GangRunner {
 public:
  // Does not own clock (stop deadlines).
  explicit Supervisor(Clock* clock);
  // Kills (SIGKILL) and reaps every live rank.
  ~Supervisor() override;

  [[nodiscard]] absl::StatusOr<std::string> Launch(const GangLaunch& gang) override;
  void Stop(const std::string& job_id, int attempt, absl::Duration grace) override;
  void RequestCheckpoint(const std::string& job_id, int attempt) override;
  PollResult Poll() override;
  int live() const override { return static_cast<int>(procs_.size()); }
  // Pids of the live ranks of a job (tests check nothing is left behind).
  std::vector<pid_t> Pids(const std::string& job_id) const;

 private:
  struct Proc {
    std::string job_id;
    int attempt = 0;
    int rank = 0;
    pid_t pid = -1;
    LogTail log;  // the rank's log file, from where this attempt started writing
    int64_t kill_at_us = -1;  // SIGKILL deadline once stopped
  };
  void KillAndReap(Proc& p);

  Clock* const clock_;
  std::map<pid_t, std::unique_ptr<Proc>> procs_;
};

}  // namespace accel::server
