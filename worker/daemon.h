// accel-worker's daemon mode: one rank of a job that acceld started. Reads the environment
// acceld (or any launcher speaking the same contract) set — ACCEL_COORDINATOR, ACCEL_JOB_ID,
// ACCEL_ATTEMPT, ACCEL_WORKER_TOKEN, and the rank (worker/launch_env.h) — then:
//   Register -> Assignment (job spec, world, rendezvous prefix)
//   -> rendezvous through acceld's KV (rpc::GrpcStore) -> gloo communicators for the plan,
//      listening on loopback when acceld is local, else on this host's address toward acceld
//   -> Trainer -> metrics (rank 0, every log_every steps), memory (every rank, after setup,
//      after the first step and at the end) and checkpoint events on one ReportEvents stream,
//      with a heartbeat every assignment.heartbeat_interval_s from a thread of its own
//   -> returns kFinished once training (and the final checkpoint, if any) is done.
// Checkpoints are sharded (<dir>/step_<n>/, <dir>/latest); attempt 2 and later resume from the
// latest one.
//
// Checkpoint on request (acceld's SIGTERM, docs/rpc.md "Stopping acceld"): SIGUSR1 asks the
// rank to checkpoint. The signal is blocked in every thread of the worker and taken by one
// watcher thread (so it never interrupts a system call in gloo or gRPC). After each step the
// ranks agree on it with a one-float all-reduce over the world group (a rank that saw the
// signal makes every rank stop at the same step), save a sharded checkpoint of that step
// collectively, report the checkpoint event and return kCheckpointedOnRequest; accel-worker
// then exits with kExitCheckpointed. A request during the last step is ignored: the job just
// finishes.
#pragma once

#include <signal.h>

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel::worker {

struct DaemonEnv {
  std::string coordinator;  // "host:port" or "unix:/path"
  std::string job_id;
  int attempt = 0;
  int rank = 0;
  int world_size = 0;
  int local_world_size = 1;  // ranks of this gang on this machine
  std::string launch_source;  // worker/launch_env.h: "torchrun", "slurm", "kubernetes"
  std::string token;
  // $ACCEL_TLS_CA: a PEM CA bundle; the channel to acceld is TLS, checked against it (cluster
  // launchers' workers dial acceld's TLS port across hosts). Empty: plaintext.
  std::string tls_ca;
  // $ACCEL_STATE_ID: acceld's state identity, part of the checkpoint owner (checkpoint_owner.h).
  // Empty when acceld sent none.
  std::string state_id;
};

// How a daemon worker ended, when it did not fail.
enum class DaemonOutcome {
  kFinished,               // every step done: exit 0
  kCheckpointedOnRequest,  // stopped after a requested checkpoint: exit kExitCheckpointed
};
// The signal acceld sends to ask for a checkpoint, and the exit code that answers it. acceld
// has the same numbers (server/core/gang_runner.h); they are part of the worker contract.
inline constexpr int kCheckpointSignal = SIGUSR1;
inline constexpr int kExitCheckpointed = 3;

// InvalidArgument naming the first missing or malformed variable. The rank and world come from
// worker/launch_env.h: torchrun's variables (acceld's local launcher), Slurm's (its slurm
// launcher: srun sets them, acceld sets only the ACCEL_* ones) or a Kubernetes pod's.
[[nodiscard]] absl::StatusOr<DaemonEnv> DaemonEnvFromEnvironment();
[[nodiscard]] absl::StatusOr<DaemonEnv> DaemonEnvFromVars(const std::map<std::string, std::string>& vars);

// Blocks kCheckpointSignal in the calling thread (and so in every thread it starts) for the rest
// of the process: call it from the main thread before any other thread exists.
[[nodiscard]] absl::StatusOr<DaemonOutcome> RunDaemonWorker(const DaemonEnv& env);
// DaemonEnvFromEnvironment() then RunDaemonWorker(env).
[[nodiscard]] absl::StatusOr<DaemonOutcome> RunDaemonWorker();

}  // namespace accel::worker
