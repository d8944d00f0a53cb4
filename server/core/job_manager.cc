// JobManager (job_manager.h): the facade. Each call that changes a job holds the order lock
// (ControlState::order_mu) from its first decision to its last write and takes the state lock
// (ControlState::mu) only around decisions, so nothing here writes to SQLite or parses JSON with
// the state lock held.
#include "server/core/job_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "server/core/checkpoint_dirs.h"

namespace accel::server {
namespace {

std::string StateIdOf(StateStore* store) {
  if (store == nullptr) return "";
  absl::StatusOr<std::string> id = store->StateId();
  if (!id.ok()) ACCEL_LOG(error, "state id: {}", std::string(id.status().message()));
  return id.value_or("");
}

}  // namespace

JobManager::JobManager(ManagerOptions options, JobRegistry* registry, EventLog* events,
                       StateStore* store, GangRunner* runner, Clock* clock, Clock* wall_clock)
    : options_(std::move(options)),
      registry_(registry),
      events_(events),
      store_(store),
      clock_(clock),
      wall_clock_(wall_clock != nullptr ? wall_clock : clock),
      state_id_(StateIdOf(store)),
      state_(options_, runner),
      lifecycle_(&options_, &state_, registry, events, store, clock, wall_clock_, state_id_) {}

JobManager::~JobManager() {
  {
    absl::MutexLock lock(&state_.mu);
    state_.loop_stop = true;
  }
  if (loop_.joinable()) loop_.join();
}

void JobManager::AddLauncher(const std::string& name, GangRunner* runner) {
  absl::MutexLock lock(&state_.mu);
  state_.placement.AddLauncher(name, runner);
}

void JobManager::SetClusterAddress(const std::string& address, std::vector<std::string> env) {
  absl::MutexLock lock(&state_.mu);
  state_.cluster_address = address;
  state_.cluster_env = std::move(env);
}

void JobManager::SetWorkerAddress(const std::string& coordinator, const std::string& master_addr,
                                  int master_port) {
  absl::MutexLock lock(&state_.mu);
  state_.coordinator_address = coordinator;
  state_.master_addr = master_addr;
  state_.master_port = master_port;
}

void JobManager::Start() {
  loop_ = std::thread([this] {
    while (true) {
      {
        absl::MutexLock lock(&state_.mu);
        if (state_.loop_stop) return;
        if (state_.shutting_down) break;
      }
      lifecycle_.Tick();
      clock_->SleepForMicros(absl::ToInt64Microseconds(options_.tick_interval));
    }
    // The workers' parent-death signal fires when the thread that forked them exits, so the
    // thread that launched them also sees them out.
    lifecycle_.Drain();
  });
}

void JobManager::Shutdown() {
  {
    absl::MutexLock lock(&state_.mu);
    state_.shutting_down = true;
  }
  if (loop_.joinable()) {
    loop_.join();
  } else {
    lifecycle_.Drain();  // no control loop (tests): this thread drives the runner
  }
}

absl::StatusOr<JobRecord> JobManager::Submit(const JobRecord& job) {
  absl::MutexLock order(&state_.order_mu);
  GangRunner* runner = nullptr;
  {
    absl::MutexLock lock(&state_.mu);
    if (state_.shutting_down) return absl::UnavailableError("acceld is shutting down");
    runner = state_.placement.RunnerFor(job);
  }
  if (runner == nullptr) return absl::InvalidArgumentError(NoLauncher(job));
  // Reads and parses the directory's owner.json with the state lock released; the order lock
  // keeps a second job naming the same directory from passing before this one is stored.
  ACCEL_RETURN_IF_ERROR(CheckCheckpointDirFree(Env::Default(), job.knobs.checkpoint_dir,
                                               registry_->List(), state_id_));
  if (Placement::IsRemote(job)) {  // the cluster has the machines; its scheduler queues the job
    if (absl::Status s = runner->CheckSettings(job.knobs.launcher_settings); !s.ok()) {
      return absl::InvalidArgumentError(s.message());
    }
  } else {
    absl::MutexLock lock(&state_.mu);
    ACCEL_RETURN_IF_ERROR(state_.placement.CheckFits(job));
  }
  ACCEL_ASSIGN_OR_RETURN(JobRecord created, registry_->Create(job));
  absl::MutexLock lock(&state_.mu);
  ACCEL_RETURN_IF_ERROR(state_.placement.Enqueue(created));
  return created;
}

absl::StatusOr<JobRecord> JobManager::Cancel(const std::string& job_id) {
  absl::MutexLock order(&state_.order_mu);
  ACCEL_ASSIGN_OR_RETURN(JobRecord job, registry_->Get(job_id));
  if (job.state == JobState::kCancelled) return job;
  if (IsTerminal(job.state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " already ended ", JobStateName(job.state)));
  }
  bool queued = false;
  {
    absl::MutexLock lock(&state_.mu);
    if (Gang* gang = state_.workers.Find(job_id); gang != nullptr) {
      gang->Stop(StopReason::kCancel, "");
    } else {
      // Queued (first time or waiting to restart): nothing runs.
      state_.placement.Unschedule(job_id);
      queued = true;
    }
  }
  if (queued) return registry_->Transition(job_id, JobState::kCancelled, "cancelled by the user");
  return registry_->Get(job_id);
}

absl::StatusOr<JobRecord> JobManager::Delete(const std::string& job_id) {
  absl::MutexLock order(&state_.order_mu);
  return lifecycle_.DeleteEnded(job_id);
}

absl::StatusOr<WorkerIdentity> JobManager::AuthenticateWorker(const std::string& token) const {
  absl::MutexLock lock(&state_.mu);
  return state_.workers.Authenticate(token);
}

absl::StatusOr<WorkerAssignment> JobManager::Register(const WorkerIdentity& who, int rank,
                                                      int64_t pid) {
  absl::MutexLock order(&state_.order_mu);
  int world = 0;
  bool all = false;
  bool stopping = false;
  {
    absl::MutexLock lock(&state_.mu);
    ACCEL_ASSIGN_OR_RETURN(Gang * gang, state_.workers.Register(who, rank, clock_->NowMicros()));
    world = static_cast<int>(gang->ranks.size());
    all = std::all_of(gang->ranks.begin(), gang->ranks.end(),
                      [](const RankState& r) { return r.registered; });
    stopping = gang->stop != StopReason::kNone;
  }
  ACCEL_ASSIGN_OR_RETURN(JobRecord job, registry_->Get(who.job_id));
  if (all && job.state == JobState::kStarting && !stopping) {
    ACCEL_RETURN_IF_ERROR(
        registry_
            ->Transition(who.job_id, JobState::kRunning,
                         absl::StrCat("all ", world, " ranks registered"))
            .status());
  }
  WorkerAssignment a;
  a.job_id = who.job_id;
  a.attempt = who.attempt;
  a.rank = rank;
  a.world_size = world;
  a.spec_json = job.spec_json;
  a.training_plan = job.training_plan;
  a.rendezvous_prefix = absl::StrCat(who.job_id, "/attempt-", who.attempt);
  a.heartbeat_interval_s = absl::ToDoubleSeconds(options_.heartbeat_interval);
  return a;
}

absl::Status JobManager::Report(const WorkerIdentity& who, int rank,
                                std::vector<WorkerReport> reports) {
  if (reports.empty()) {  // a heartbeat: nothing to write, so no order lock
    absl::MutexLock lock(&state_.mu);
    return state_.workers.Heartbeat(who, rank, clock_->NowMicros());
  }
  // The order lock keeps the attempt alive (its ending is written after these events).
  absl::MutexLock order(&state_.order_mu);
  {
    absl::MutexLock lock(&state_.mu);
    ACCEL_RETURN_IF_ERROR(state_.workers.Heartbeat(who, rank, clock_->NowMicros()));
  }
  std::vector<Event> events;
  int64_t last_step = -1;
  for (WorkerReport& r : reports) {
    Event e;
    e.job_id = who.job_id;
    e.attempt = who.attempt;
    e.rank = rank;
    e.kind = r.kind;
    e.body_json = std::move(r.body_json);
    events.push_back(std::move(e));
    if (r.kind == EventKind::kMetrics) last_step = std::max(last_step, r.step);
    if (r.checkpoint.has_value()) {
      CheckpointRecord c = *r.checkpoint;
      c.job_id = who.job_id;
      c.attempt = who.attempt;
      c.time_us = wall_clock_->NowMicros();
      ACCEL_RETURN_IF_ERROR(store_->AddCheckpoint(c));
    }
  }
  ACCEL_RETURN_IF_ERROR(events_->Append(events));
  if (last_step >= 0) {
    ACCEL_RETURN_IF_ERROR(registry_->Update(who.job_id, [&](JobRecord& j) {
      j.last_step = std::max(j.last_step, last_step);
    }));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<comm::InMemoryStore>> JobManager::Kv(const WorkerIdentity& who) {
  absl::MutexLock lock(&state_.mu);
  ACCEL_ASSIGN_OR_RETURN(Gang * gang, state_.workers.Live(who));
  return gang->kv;
}

ClusterView JobManager::Cluster() const {
  absl::MutexLock lock(&state_.mu);
  return state_.placement.View();
}

std::string JobManager::TokenForTest(const std::string& job_id) const {
  absl::MutexLock lock(&state_.mu);
  return state_.workers.TokenOf(job_id);
}

}  // namespace accel::server
