// JobManager: the control plane's brain, a thin facade over its parts. It ties the JobRegistry
// (states), the Placement (slot pools and launchers: job_placement.h), the WorkerTable (attempt
// tokens, registration, heartbeats: worker_table.h), the GangLifecycle (start, stop, restart,
// end: gang_lifecycle.h) and the EventLog (what clients see) together:
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
// checkpoint without using up a restart.
//
// Threading: every method is thread-safe. Locks (ControlState in gang_lifecycle.h): a call that
// changes a job (Submit, Cancel, Delete, Register, a Report with events, Tick) takes the order
// lock for its whole length and the state lock only to decide; every SQLite write, JSON parse,
// launch and poll happens with the state lock released. AuthenticateWorker, a heartbeat (a
// Report without events), Kv, Cluster and TokenForTest take the state lock alone, so they never
// wait for the state store. docs/reliability.md §"JobManager's locks" says why this is safe.
// Tick() does the process work (launch, reap, deadlines) and must always be called from the
// same long-lived thread (see Supervisor); Start() runs it every `tick_interval` on a thread of
// its own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/comm/in_memory_store.h"
#include "server/core/event_log.h"
#include "server/core/gang_lifecycle.h"
#include "server/core/gang_runner.h"
#include "server/core/job_placement.h"
#include "server/core/job_registry.h"
#include "server/core/state_store.h"
#include "server/core/worker_table.h"

namespace accel::server {

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

class JobManager {
 public:
  // Does not own the pointers, which must outlive it. `clock` times deadlines and heartbeats;
  // `wall_clock` (default: `clock`) stamps the attempt records users read.
  JobManager(ManagerOptions options, JobRegistry* registry, EventLog* events, StateStore* store,
             GangRunner* runner, Clock* clock, Clock* wall_clock = nullptr);
  ~JobManager();

  // Requeues what an earlier acceld left unfinished. Call once, before Start().
  [[nodiscard]] absl::Status Recover() { return lifecycle_.Recover(); }
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
  void Tick() { lifecycle_.Tick(); }

  ClusterView Cluster() const;
  // The current job token of a job (tests; empty when it has no live attempt).
  std::string TokenForTest(const std::string& job_id) const;

 private:
  const ManagerOptions options_;
  JobRegistry* const registry_;
  EventLog* const events_;
  StateStore* const store_;
  Clock* const clock_;
  Clock* const wall_clock_;
  // StateStore::StateId(): the workers' $ACCEL_STATE_ID, part of their checkpoint owner; "" when
  // the store could not give one (the workers then say "acceld").
  const std::string state_id_;
  mutable ControlState state_;
  GangLifecycle lifecycle_;
  std::thread loop_;
};

}  // namespace accel::server
