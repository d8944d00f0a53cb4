// accel-worker's daemon mode: one rank of a job that acceld started. Reads the environment
// acceld (or any launcher speaking the same contract) set — ACCEL_COORDINATOR, ACCEL_JOB_ID,
// ACCEL_ATTEMPT, ACCEL_WORKER_TOKEN, RANK, WORLD_SIZE — then:
//   Register -> Assignment (job spec, world, rendezvous prefix)
//   -> rendezvous through acceld's KV (rpc::GrpcStore) -> gloo communicators for the plan
//   -> Trainer -> metrics (rank 0, every log_every steps), memory (every rank, after setup,
//      after the first step and at the end) and checkpoint events on one ReportEvents stream,
//      with a heartbeat every assignment.heartbeat_interval_s from a thread of its own
//   -> returns OK once training (and the final checkpoint, if any) is done.
// Checkpoints are weights only (model.safetensors under <dir>/step-<n>/); nothing resumes from
// them yet, so a restarted attempt trains from step 0.
#pragma once

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
  std::string token;
};

// InvalidArgument naming the first missing or malformed variable.
[[nodiscard]] absl::StatusOr<DaemonEnv> DaemonEnvFromEnvironment();

[[nodiscard]] absl::Status RunDaemonWorker(const DaemonEnv& env);
// DaemonEnvFromEnvironment() then RunDaemonWorker(env).
[[nodiscard]] absl::Status RunDaemonWorker();

}  // namespace accel::worker
