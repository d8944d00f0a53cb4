// JobManager: the control plane's brain. Ties the JobRegistry (states), the Scheduler (slots),
// a GangRunner (processes) and the EventLog (what clients see) together:
//   submit -> QUEUED -> placed -> STARTING (attempt n, one worker per rank, a fresh job token)
//   -> every rank registered -> RUNNING -> every rank exited 0 -> SUCCEEDED.
// A rank exiting non-zero (or silent past the heartbeat deadline) stops the whole gang
// (SIGTERM, grace, SIGKILL); once every rank is gone the job restarts as attempt n+1 on the same
// slots while restarts_used < max_restarts (a job-wide count), else it is FAILED with the first
// failing rank's error. Cancel stops the gang and ends CANCELLED once every worker is gone.
// Recover() after an acceld restart: jobs that were STARTING or RUNNING lost their workers with
// the old acceld (parent-death signal), so they go RESTARTING and run again without using up a
// restart; QUEUED ones queue again in their old order.
// Shutdown() (acceld's SIGTERM) first asks each RUNNING gang with a checkpoint.dir to checkpoint
// (GangRunner::RequestCheckpoint); its ranks save at the next step boundary and exit with
// kWorkerExitCheckpointed. Ranks still alive after the job's grace period are stopped as usual
// (SIGTERM, grace, SIGKILL). The job stays RUNNING, so the next acceld resumes it from that
// checkpoint without using up a restart. The lifecycle half is in job_manager_lifecycle.cc.
//
// Threading: every method is thread-safe (one mutex). Tick() does the process work (launch,
// reap, deadlines) and must always be called from the same long-lived thread (see Supervisor);
// Start() runs it every `tick_interval` on a thread of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/base/env.h"
#include "engine/comm/in_memory_store.h"
#include "server/event_log.h"
#include "server/gang_runner.h"
#include "server/gpus.h"
#include "server/job_registry.h"
#include "server/retention.h"
#include "server/scheduler.h"
#include "server/state_store.h"

namespace accel::server {

struct ManagerOptions {
  int total_slots = 1;  // CPU slots
  std::string device = "cpu";
  // GPUs: one slot each of device kind "cuda" (a pool of its own; none: cuda jobs are refused).
  std::vector<GpuDevice> gpus;
  std::string worker_bin;                // accel-worker
  std::vector<std::string> worker_args;  // after the program path
  std::string coordinator_address;       // ACCEL_COORDINATOR for workers
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR / MASTER_PORT (torchrun's contract)
  int master_port = 0;
  std::string log_dir;                   // <log_dir>/<job>/attempt-<n>/rank-<r>.log
  std::vector<std::string> base_env;     // inherited by workers ("K=V"); overridden per rank
  absl::Duration heartbeat_timeout = absl::Seconds(60);  // when the job spec gives none
  absl::Duration stop_grace = absl::Seconds(10);          // when the job spec gives none
  absl::Duration heartbeat_interval = absl::Seconds(2);
  absl::Duration tick_interval = absl::Milliseconds(50);
  std::function<std::string()> new_token;  // job tokens; random when unset
  RetentionPolicy retention;               // which ended jobs acceld forgets by itself
  // The launcher of a job that names none (acceld --launcher): local, slurm or kubernetes.
  std::string default_launcher = "local";
};

// Who a worker token belongs to.
struct WorkerIdentity {
  std::string job_id;
  int attempt = 0;
};

struct WorkerAssignment {
  std::string job_id;
  int attempt = 0;
  int rank = 0;
  int world_size = 0;
  std::string spec_json;
  std::string training_plan;  // JobRecord::training_plan: what the rank trains
  std::string rendezvous_prefix;
  double heartbeat_interval_s = 0;
};

// A worker's report, body in proto3 JSON of the accel.v1 message of that kind.
struct WorkerReport {
  EventKind kind = EventKind::kLog;
  std::string body_json;
  std::optional<CheckpointRecord> checkpoint;  // with kind == kCheckpoint
  int64_t step = -1;                           // metrics: the step it describes
};

struct PoolView {
  std::string device;  // "cpu" | "cuda"
  int total_slots = 0;
  int free_slots = 0;
  std::vector<std::string> names;    // cuda: one per slot
  std::vector<int64_t> memory_bytes;  // cuda: one per slot (0: unknown)
};

// The CPU pool in the top-level fields (as before GPUs), every pool in `pools`.
struct ClusterView {
  std::string device;
  int total_slots = 0;
  int free_slots = 0;
  std::map<std::string, std::vector<int>> allocations;  // every pool's, by job id
  std::map<std::string, std::string> allocation_device;  // job id -> its pool's device
  std::vector<std::string> queue;                        // the CPU queue, then the cuda one
  std::vector<PoolView> pools;
};

class JobManager {
 public:
  // Does not own the pointers, which must outlive it. `clock` times deadlines and heartbeats;
  // `wall_clock` (default: `clock`) stamps the attempt records users read.
  JobManager(ManagerOptions options, JobRegistry* registry, EventLog* events, StateStore* store,
             GangRunner* runner, Clock* clock, Clock* wall_clock = nullptr);
  ~JobManager();

  // Requeues what an earlier acceld left unfinished. Call once, before Start().
  [[nodiscard]] absl::Status Recover();
  // Adds a launcher that places ranks on other machines ("slurm", "kubernetes"); the runner
  // given to the constructor is "local". Jobs naming it skip acceld's slot pools: the cluster
  // queues them. Call before Recover() and Start(); does not own `runner`.
  void AddLauncher(const std::string& name, GangRunner* runner);
  // The address workers on other machines dial (ACCEL_COORDINATOR of cluster launches);
  // unset: the local workers' address.
  // `env` ("K=V") goes to those workers too (ACCEL_TLS_CA).
  void SetClusterAddress(const std::string& address, std::vector<std::string> env = {});
  const std::string& default_launcher() const { return options_.default_launcher; }
  // Where workers reach acceld (ACCEL_COORDINATOR, MASTER_ADDR, MASTER_PORT), known only once
  // the server listens; call before Start().
  void SetWorkerAddress(const std::string& coordinator, const std::string& master_addr,
                        int master_port);
  void Start();
  // Stops the control loop, asks RUNNING gangs that have a checkpoint.dir to checkpoint and stops
  // every other gang (SIGTERM, grace, SIGKILL), then drives the runner until the workers are
  // gone: a checkpointing gang gets its grace period to save and exit, then is stopped like the
  // others. Job states stay as they are, so the next acceld resumes them.
  void Shutdown();

  // `job` carries name, spec_json, slots, priority, max_restarts; the spec's resources.device
  // picks the pool. InvalidArgument (naming resources.device or resources.num_processes) when
  // that pool is absent or has fewer slots than the job needs; FailedPrecondition when its
  // checkpoint.dir is another job's (checkpoint_dirs.h); nothing is stored then.
  [[nodiscard]] absl::StatusOr<JobRecord> Submit(const JobRecord& job);
  // Requests the cancellation; the job becomes CANCELLED once its workers are gone (at once
  // when it has none). Cancelling a CANCELLED job returns it; another ended job is
  // FailedPrecondition.
  [[nodiscard]] absl::StatusOr<JobRecord> Cancel(const std::string& job_id);
  // Forgets an ended job (JobRegistry::Delete) and removes its rank logs; its id is never used
  // again. Returns the job as it was. NotFound, or FailedPrecondition for a job not yet ended.
  [[nodiscard]] absl::StatusOr<JobRecord> Delete(const std::string& job_id);

  // Worker API. Unauthenticated (unknown token) or FailedPrecondition (stale attempt).
  [[nodiscard]] absl::StatusOr<WorkerIdentity> AuthenticateWorker(const std::string& token) const;
  [[nodiscard]] absl::StatusOr<WorkerAssignment> Register(const WorkerIdentity& who, int rank,
                                                          int64_t pid);
  // Stores the reports as events (and checkpoint records); every report, heartbeats included
  // (empty `reports`), refreshes the rank's heartbeat.
  [[nodiscard]] absl::Status Report(const WorkerIdentity& who, int rank,
                                    std::vector<WorkerReport> reports);
  // The job's rendezvous store while the attempt lives.
  [[nodiscard]] absl::StatusOr<std::shared_ptr<comm::InMemoryStore>> Kv(const WorkerIdentity& who);

  // One round of the control loop: reap and tail workers, enforce deadlines, finish stopped
  // gangs, place queued jobs and start them.
  void Tick();

  ClusterView Cluster() const;
  // The current job token of a job (tests; empty when it has no live attempt).
  std::string TokenForTest(const std::string& job_id) const;

 private:
  enum class StopReason { kNone, kFailure, kCancel, kShutdown };
  struct RankState {
    bool registered = false;
    bool exited = false;
    bool exit_ok = false;
    bool checkpointed = false;  // exited kWorkerExitCheckpointed
    int64_t last_seen_us = 0;
  };
  struct Gang {
    std::string job_id;
    int attempt = 0;
    std::string token;
    std::vector<RankState> ranks;
    std::shared_ptr<comm::InMemoryStore> kv;
    StopReason stop = StopReason::kNone;
    std::string first_error;
    absl::Duration heartbeat_timeout;
    absl::Duration grace;
    int64_t start_us = 0;  // wall time
    bool can_checkpoint = false;  // the spec has a checkpoint.dir
    // Asked to checkpoint: when to stop the ranks that have not exited (steady clock); -1: not.
    int64_t checkpoint_deadline_us = -1;
    GangRunner* runner = nullptr;  // the job's launcher
    std::string placement;         // the cluster's name for the attempt ("" local)
  };

  void StartAttempt(const JobRecord& job, const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StopGang(Gang& gang, StopReason reason, const std::string& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleExit(const RankExit& exit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishGang(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndJob(const std::string& job_id, JobState state, const std::string& message,
              const std::string& error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndAttempt(const Gang& gang, const std::string& outcome) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Gang*> LiveGang(const WorkerIdentity& who) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Log(const absl::Status& s, const char* what);
  // Whether Shutdown asks the gang to checkpoint first: RUNNING (every rank registered, none
  // exited), not already stopping, with a checkpoint.dir.
  // The shutdown sequence, on the thread that launched the workers (see Start()).
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);
  bool ShouldCheckpointOnShutdown(const Gang& gang) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A job-wide log event from acceld itself (stream "acceld").
  void Notice(const std::string& job_id, int attempt, const std::string& line)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // cuda_device: the CUDA_VISIBLE_DEVICES value of the rank ("" for CPU jobs: left as is).
  std::vector<std::string> RankEnv(const JobRecord& job, int attempt, int rank,
                                   const std::string& token, int threads,
                                   const std::string& cuda_device) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The pool of a device kind: the CPU scheduler, the GPU one, or null (no such pool).
  Scheduler* Pool(DeviceKind device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job's launcher, or null when this acceld has none of that name.
  GangRunner* RunnerFor(const JobRecord& job) const;
  // Whether the job's ranks go to a cluster (slurm, kubernetes) rather than acceld's pools.
  static bool IsRemote(const JobRecord& job) { return job.knobs.launcher != "local"; }
  // Queues the job where its launcher takes it: a slot pool, or the remote list that the next
  // Tick starts (the cluster queues it). FailedPrecondition naming the pool or launcher.
  absl::Status Enqueue(const JobRecord& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The GangLaunch fields a remote launcher reads (shape, shared command and environment).
  void DescribeForCluster(const JobRecord& job, const Gang& gang, GangLaunch& launch) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<JobRecord> DeleteLocked(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies options_.retention when its interval has passed since the last sweep (and at the
  // first call).
  void SweepRetention() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the job out of every pool's queue and frees its slots.
  void Unschedule(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ManagerOptions options_;
  JobRegistry* const registry_;
  EventLog* const events_;
  StateStore* const store_;
  GangRunner* const runner_;                       // the local launcher
  std::map<std::string, GangRunner*> launchers_;   // by name, "local" included
  Clock* const clock_;
  Clock* const wall_clock_;
  // StateStore::StateId(): the workers' $ACCEL_STATE_ID, part of their checkpoint owner; "" when
  // the store could not give one (the workers then say "acceld").
  const std::string state_id_;

  mutable absl::Mutex mu_;
  Scheduler scheduler_ ABSL_GUARDED_BY(mu_);      // CPU slots
  Scheduler gpu_scheduler_ ABSL_GUARDED_BY(mu_);  // one slot per options_.gpus entry
  std::map<std::string, Gang> gangs_ ABSL_GUARDED_BY(mu_);  // by job id
  std::map<std::string, WorkerIdentity> tokens_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> remote_ready_ ABSL_GUARDED_BY(mu_);  // remote jobs to start next Tick
  std::string coordinator_address_ ABSL_GUARDED_BY(mu_);
  std::string cluster_address_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> cluster_env_ ABSL_GUARDED_BY(mu_);
  std::string master_addr_ ABSL_GUARDED_BY(mu_);
  int master_port_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool loop_stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t last_sweep_us_ ABSL_GUARDED_BY(mu_) = -1;  // steady clock; -1: never swept
  std::thread loop_;
};

// 32 random bytes, hex.
std::string RandomToken();

}  // namespace accel::server
