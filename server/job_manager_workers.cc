// JobManager's worker-facing half (job_manager.h): the calls accel-worker ranks make through
// WorkerService (token lookup, Register, event reports, the rendezvous store), and the cluster
// view. The control loop and the state machine are in job_manager.cc.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "server/job_manager.h"  // IWYU pragma: associated

namespace accel::server {

absl::StatusOr<WorkerIdentity> JobManager::AuthenticateWorker(const std::string& token) const {
  absl::MutexLock lock(&mu_);
  auto it = tokens_.find(token);
  if (it == tokens_.end()) {
    return absl::UnauthenticatedError("unknown or expired worker token");
  }
  return it->second;
}

absl::StatusOr<JobManager::Gang*> JobManager::LiveGang(const WorkerIdentity& who) {
  auto it = gangs_.find(who.job_id);
  if (it == gangs_.end() || it->second.attempt != who.attempt) {
    return absl::FailedPreconditionError(absl::StrCat(
        "attempt ", who.attempt, " of job ", who.job_id, " is not running any more"));
  }
  return &it->second;
}

absl::StatusOr<WorkerAssignment> JobManager::Register(const WorkerIdentity& who, int rank,
                                                      int64_t pid) {
  absl::MutexLock lock(&mu_);
  ACCEL_ASSIGN_OR_RETURN(Gang * gang, LiveGang(who));
  if (rank < 0 || rank >= static_cast<int>(gang->ranks.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is outside the job's ", gang->ranks.size(), " ranks"));
  }
  RankState& rs = gang->ranks[rank];
  if (rs.registered) {
    return absl::AlreadyExistsError(absl::StrCat("rank ", rank, " registered already"));
  }
  rs.registered = true;
  rs.last_seen_us = clock_->NowMicros();
  ACCEL_ASSIGN_OR_RETURN(JobRecord job, registry_->Get(who.job_id));
  const bool all = std::all_of(gang->ranks.begin(), gang->ranks.end(),
                               [](const RankState& r) { return r.registered; });
  if (all && job.state == JobState::kStarting && gang->stop == StopReason::kNone) {
    ACCEL_RETURN_IF_ERROR(registry_
                              ->Transition(who.job_id, JobState::kRunning,
                                           absl::StrCat("all ", gang->ranks.size(),
                                                        " ranks registered"))
                              .status());
  }
  WorkerAssignment a;
  a.job_id = who.job_id;
  a.attempt = who.attempt;
  a.rank = rank;
  a.world_size = static_cast<int>(gang->ranks.size());
  a.spec_json = job.spec_json;
  a.training_plan = job.training_plan;
  a.rendezvous_prefix = absl::StrCat(who.job_id, "/attempt-", who.attempt);
  a.heartbeat_interval_s = absl::ToDoubleSeconds(options_.heartbeat_interval);
  return a;
}

absl::Status JobManager::Report(const WorkerIdentity& who, int rank,
                                std::vector<WorkerReport> reports) {
  absl::MutexLock lock(&mu_);
  ACCEL_ASSIGN_OR_RETURN(Gang * gang, LiveGang(who));
  if (rank < 0 || rank >= static_cast<int>(gang->ranks.size())) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " is outside the job"));
  }
  gang->ranks[rank].last_seen_us = clock_->NowMicros();
  if (reports.empty()) return absl::OkStatus();
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
  absl::MutexLock lock(&mu_);
  ACCEL_ASSIGN_OR_RETURN(Gang * gang, LiveGang(who));
  return gang->kv;
}

ClusterView JobManager::Cluster() const {
  absl::MutexLock lock(&mu_);
  ClusterView v;
  v.device = options_.device;
  v.total_slots = scheduler_.total_slots();
  v.free_slots = scheduler_.free_slots();
  PoolView cpu{options_.device, v.total_slots, v.free_slots, {}, {}};
  v.pools.push_back(cpu);
  if (!options_.gpus.empty()) {
    PoolView gpu{"cuda", gpu_scheduler_.total_slots(), gpu_scheduler_.free_slots(), {}, {}};
    for (const GpuDevice& g : options_.gpus) {
      gpu.names.push_back(g.name);
      gpu.memory_bytes.push_back(g.memory_bytes);
    }
    v.pools.push_back(gpu);
  }
  for (const auto& [device, pool] : {std::pair<std::string, const Scheduler*>{options_.device,
                                                                             &scheduler_},
                                     {"cuda", &gpu_scheduler_}}) {
    for (const auto& [job, slots] : pool->allocations()) {
      v.allocations[job] = slots;
      v.allocation_device[job] = device;
    }
    for (const std::string& id : pool->Queue()) v.queue.push_back(id);
  }
  return v;
}

std::string JobManager::TokenForTest(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(job_id);
  return it == gangs_.end() ? "" : it->second.token;
}

}  // namespace accel::server
