#include "server/core/job_registry.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "nlohmann/json.hpp"

namespace accel::server {

std::string StateEventJson(JobState state, const std::string& message) {
  nlohmann::json j;
  j["state"] = std::string(JobStateName(state));
  if (!message.empty()) j["message"] = message;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::StatusOr<std::unique_ptr<JobRegistry>> JobRegistry::Load(StateStore* store, EventLog* events,
                                                               Clock* clock) {
  std::unique_ptr<JobRegistry> registry(new JobRegistry(store, events, clock));
  ACCEL_ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, store->LoadJobs());
  ACCEL_ASSIGN_OR_RETURN(const int64_t next_number, store->NextJobNumber());
  absl::MutexLock lock(&registry->mu_);
  registry->next_number_ = next_number;
  for (JobRecord& j : jobs) {
    registry->next_number_ = std::max(registry->next_number_, j.number + 1);
    registry->by_id_[j.id] = j.number;
    registry->jobs_[j.number] = std::move(j);
  }
  return registry;
}

absl::StatusOr<JobRecord> JobRegistry::Create(const JobRecord& proto) {
  absl::MutexLock lock(&mu_);
  JobRecord job = proto;
  job.number = next_number_;
  job.id = absl::StrCat("job-", job.number);
  job.state = JobState::kQueued;
  job.attempt = 0;
  job.restarts_used = 0;
  job.error.clear();
  job.submit_us = clock_->NowMicros();
  job.start_us = job.end_us = 0;
  job.last_step = -1;
  std::vector<Event> events(1);
  events[0].job_id = job.id;
  events[0].kind = EventKind::kState;
  events[0].body_json = StateEventJson(JobState::kQueued, "submitted");
  ACCEL_RETURN_IF_ERROR(events_->Append(events, &job));
  ++next_number_;
  by_id_[job.id] = job.number;
  jobs_[job.number] = job;
  return job;
}

absl::StatusOr<JobRecord> JobRegistry::Get(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
  return jobs_.at(it->second);
}

std::vector<JobRecord> JobRegistry::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<JobRecord> out;
  out.reserve(jobs_.size());
  for (const auto& [number, job] : jobs_) out.push_back(job);
  return out;
}

absl::StatusOr<JobRecord> JobRegistry::Transition(const std::string& id, JobState to,
                                                  const std::string& message,
                                                  const std::function<void(JobRecord&)>& mutate) {
  absl::MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
  JobRecord& current = jobs_.at(it->second);
  if (!IsLegalTransition(current.state, to)) {
    return absl::FailedPreconditionError(absl::StrCat("job ", id, " is ",
                                                      JobStateName(current.state),
                                                      " and cannot become ", JobStateName(to)));
  }
  JobRecord next = current;
  if (mutate) mutate(next);
  next.state = to;
  const int64_t now = clock_->NowMicros();
  if (to == JobState::kStarting && next.start_us == 0) next.start_us = now;
  if (IsTerminal(to)) next.end_us = now;
  std::vector<Event> events(1);
  events[0].job_id = id;
  events[0].attempt = next.attempt;
  events[0].kind = EventKind::kState;
  events[0].body_json = StateEventJson(to, message);
  ACCEL_RETURN_IF_ERROR(events_->Append(events, &next));
  current = next;
  return next;
}

absl::StatusOr<JobRecord> JobRegistry::Delete(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
  const JobRecord job = jobs_.at(it->second);
  if (!IsTerminal(job.state)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " is ", JobStateName(job.state),
        ": only ended jobs (SUCCEEDED, FAILED, CANCELLED) can be deleted; cancel it first"));
  }
  ACCEL_RETURN_IF_ERROR(store_->DeleteJob(id));
  jobs_.erase(it->second);
  by_id_.erase(it);
  return job;
}

absl::Status JobRegistry::Update(const std::string& id,
                                 const std::function<void(JobRecord&)>& mutate) {
  absl::MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
  JobRecord next = jobs_.at(it->second);
  mutate(next);
  ACCEL_RETURN_IF_ERROR(store_->PutJob(next));
  jobs_.at(it->second) = next;
  return absl::OkStatus();
}

}  // namespace accel::server
