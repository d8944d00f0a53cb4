// GangLifecycle: how a job's attempts start, stop, restart and end (job_manager.h has the state
// machine). It starts an attempt's gang on the job's launcher, takes the ranks' exits, enforces
// the heartbeat and checkpoint deadlines, ends the attempt (restart, resume or finish), recovers
// what an earlier acceld left and drains the gangs at shutdown.
//
// Locks (ControlState): every operation that changes a job holds `order_mu` from its decision
// to its last write, so the writes of two operations never interleave and each decides on the
// state the previous one left; `mu` guards the in-memory state (Placement, WorkerTable, the
// addresses) and is held only for decisions: never across a state-store write, a JSON parse, a
// launch or a poll. Readers that write nothing (worker authentication, heartbeats, the
// rendezvous store, the cluster view) take `mu` alone and so never wait for SQLite.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/base/env.h"
#include "server/core/event_log.h"
#include "server/core/gpus.h"
#include "server/core/job_placement.h"
#include "server/core/job_registry.h"
#include "server/core/retention.h"
#include "server/core/state_store.h"
#include "server/core/worker_table.h"

namespace accel::server {

struct ManagerOptions {
  int total_slots = 1;  // CPU slots
  std::string device = "cpu";
  // GPUs: one slot each of device kind "cuda" (a pool of its own; none: cuda jobs are refused).
  std::vector<GpuDevice> gpus;
  std::string worker_bin;                 // accel-worker
  std::vector<std::string> worker_args;   // after the program path
  std::string coordinator_address;        // ACCEL_COORDINATOR for workers
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR / MASTER_PORT (torchrun's contract)
  int master_port = 0;
  std::string log_dir;                    // <log_dir>/<job>/attempt-<n>/rank-<r>.log
  std::vector<std::string> base_env;      // inherited by workers ("K=V"); overridden per rank
  absl::Duration heartbeat_timeout = absl::Seconds(60);  // when the job spec gives none
  absl::Duration stop_grace = absl::Seconds(10);          // when the job spec gives none
  absl::Duration heartbeat_interval = absl::Seconds(2);
  absl::Duration tick_interval = absl::Milliseconds(50);
  std::function<std::string()> new_token;  // job tokens; random when unset
  RetentionPolicy retention;               // which ended jobs acceld forgets by itself
  // The launcher of a job that names none (acceld --launcher): local, slurm or kubernetes.
  std::string default_launcher = "local";
};

// The state JobManager's parts share, and its two locks (see the header comment).
struct ControlState {
  ControlState(const ManagerOptions& o, GangRunner* local)
      : placement(o.total_slots, o.device, o.gpus, local),
        coordinator_address(o.coordinator_address),
        master_addr(o.master_addr),
        master_port(o.master_port) {}

  absl::Mutex order_mu;
  absl::Mutex mu ABSL_ACQUIRED_AFTER(order_mu);
  Placement placement ABSL_GUARDED_BY(mu);
  WorkerTable workers ABSL_GUARDED_BY(mu);
  std::string coordinator_address ABSL_GUARDED_BY(mu);
  std::string cluster_address ABSL_GUARDED_BY(mu);
  std::vector<std::string> cluster_env ABSL_GUARDED_BY(mu);
  std::string master_addr ABSL_GUARDED_BY(mu);
  int master_port ABSL_GUARDED_BY(mu) = 0;
  bool shutting_down ABSL_GUARDED_BY(mu) = false;
  bool loop_stop ABSL_GUARDED_BY(mu) = false;
};

class GangLifecycle {
 public:
  // Does not own the pointers. `state_id`: the workers' $ACCEL_STATE_ID.
  GangLifecycle(const ManagerOptions* options, ControlState* state, JobRegistry* registry,
                EventLog* events, StateStore* store, Clock* clock, Clock* wall_clock,
                std::string state_id);

  // Requeues what an earlier acceld left unfinished (JobManager::Recover). Takes the locks.
  [[nodiscard]] absl::Status Recover() ABSL_LOCKS_EXCLUDED(state_->order_mu, state_->mu);
  // One round of the control loop (JobManager::Tick). Takes the locks.
  void Tick() ABSL_LOCKS_EXCLUDED(state_->order_mu, state_->mu);
  // The shutdown sequence (JobManager::Shutdown), on the thread that launched the workers.
  void Drain() ABSL_LOCKS_EXCLUDED(state_->order_mu, state_->mu);
  // Forgets an ended job (JobManager::Delete): NotFound, or FailedPrecondition while it has not
  // ended or still stops its workers.
  [[nodiscard]] absl::StatusOr<JobRecord> DeleteEnded(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->order_mu) ABSL_LOCKS_EXCLUDED(state_->mu);

 private:
  // The writes below are made with order_mu held and mu not held.
  void TickLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->order_mu);
  void StartAttempt(const JobRecord& job, const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->order_mu);
  // Ends a gang already taken out of the WorkerTable: restart, resume later or finish.
  void FinishGang(Gang gang) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->order_mu);
  void EndJob(const std::string& job_id, JobState state, const std::string& message,
              const std::string& error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->order_mu);
  void EndAttempt(const Gang& gang, const std::string& outcome);
  // A job-wide log event from acceld itself (stream "acceld").
  void Notice(const std::string& job_id, int attempt, const std::string& line);
  // Applies options_->retention when its interval has passed since the last sweep (and at the
  // first call).
  void SweepRetention() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->order_mu);
  void Log(const absl::Status& s, const char* what);

  // Decisions, with mu held: a rank's exit.
  void HandleExit(const RankExit& exit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu);
  // cuda_device: the CUDA_VISIBLE_DEVICES value of the rank ("" for CPU jobs: left as is).
  std::vector<std::string> RankEnv(const JobRecord& job, int attempt, int rank,
                                   const std::string& token, const std::string& cuda_device) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu);
  // The GangLaunch fields a remote launcher reads (shape, shared command and environment).
  void DescribeForCluster(const JobRecord& job, const Gang& gang, GangLaunch& launch) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu);

  const ManagerOptions* const options_;
  ControlState* const state_;
  JobRegistry* const registry_;
  EventLog* const events_;
  StateStore* const store_;
  Clock* const clock_;
  Clock* const wall_clock_;
  const std::string state_id_;
  int64_t last_sweep_us_ ABSL_GUARDED_BY(state_->order_mu) = -1;  // steady; -1: never swept
};

}  // namespace accel::server
