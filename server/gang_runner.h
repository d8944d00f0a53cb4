// GangRunner: starts and stops the worker processes of a job attempt (one per rank) and reports
// how they end. Supervisor is the real one (fork/exec); JobManager's tests use a fake.
#pragma once

#include <signal.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
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

struct GangLaunch {
  std::string job_id;
  int attempt = 0;
  std::vector<RankLaunch> ranks;
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
  // Starts every rank or none (on error the started ones are killed and reaped).
  [[nodiscard]] virtual absl::Status Launch(const GangLaunch& gang) = 0;
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
