// WorkerTable: the live attempts ("gangs") of acceld's jobs as their workers see them: each
// attempt's token (who a worker is), its ranks' registration, exits and heartbeats, and its
// rendezvous store. Worker registration and authentication decide here; nothing here writes to
// the state store or starts a process (JobManager does, after its state lock is released).
// Not thread-safe: JobManager guards it with its state mutex (job_manager.h, "Locks").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/comm/in_memory_store.h"
#include "server/core/gang_runner.h"

namespace accel::server {

// Who a worker token belongs to.
struct WorkerIdentity {
  std::string job_id;
  int attempt = 0;
};

// Why a gang is being stopped. A cancel or shutdown overrides a failure already being handled.
enum class StopReason { kNone, kFailure, kCancel, kShutdown };

struct RankState {
  bool registered = false;
  bool exited = false;
  bool exit_ok = false;
  bool checkpointed = false;  // exited kWorkerExitCheckpointed
  int64_t last_seen_us = 0;
};

// One attempt of a job: its ranks, token, rendezvous store and how it is being stopped.
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
  int64_t start_us = 0;         // wall time
  bool can_checkpoint = false;  // the spec has a checkpoint.dir
  // Asked to checkpoint: when to stop the ranks that have not exited (steady clock); -1: not.
  int64_t checkpoint_deadline_us = -1;
  GangRunner* runner = nullptr;  // the job's launcher
  std::string placement;         // the cluster's name for the attempt ("" local)

  // Records why (the first error wins) and asks the launcher to stop the ranks (SIGTERM,
  // grace, SIGKILL); their exits come back through Poll.
  void Stop(StopReason reason, const std::string& error);
  bool AllExited() const;
  // Whether Shutdown asks the gang to checkpoint first: every rank registered and none exited,
  // not already stopping, with a checkpoint.dir.
  bool ShouldCheckpointOnShutdown() const;
};

class WorkerTable {
 public:
  // Unauthenticated for an unknown or expired token.
  [[nodiscard]] absl::StatusOr<WorkerIdentity> Authenticate(const std::string& token) const;
  // The attempt's gang; FailedPrecondition when that attempt is not running any more.
  [[nodiscard]] absl::StatusOr<Gang*> Live(const WorkerIdentity& who);
  // Marks the rank registered and seen at `now_us`; returns the gang. InvalidArgument for a rank
  // outside the gang, AlreadyExists for a second registration.
  [[nodiscard]] absl::StatusOr<Gang*> Register(const WorkerIdentity& who, int rank,
                                               int64_t now_us);
  // A report or heartbeat from the rank: refreshes its deadline.
  [[nodiscard]] absl::Status Heartbeat(const WorkerIdentity& who, int rank, int64_t now_us);

  // Makes the gang's token valid (before its workers start, so none is ever refused).
  Gang& Add(Gang gang);
  // Removes the job's gang and invalidates its token.
  Gang Take(const std::string& job_id);
  Gang* Find(const std::string& job_id);
  std::map<std::string, Gang>& gangs() { return gangs_; }
  bool empty() const { return gangs_.empty(); }
  // The job's current token ("" without a live attempt).
  std::string TokenOf(const std::string& job_id) const;

 private:
  std::map<std::string, Gang> gangs_;                // by job id
  std::map<std::string, WorkerIdentity> tokens_;     // by token
};

// 32 random bytes, hex.
std::string RandomToken();

}  // namespace accel::server
