// GangLifecycle (gang_lifecycle.h): recovering what an earlier acceld left, deleting ended jobs
// (by hand or by retention), and the shutdown that lets running gangs checkpoint before they
// stop. Starting an attempt is in gang_launch.cc, how attempts end in gang_endings.cc.
#include "server/core/gang_lifecycle.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "nlohmann/json.hpp"

namespace accel::server {

GangLifecycle::GangLifecycle(const ManagerOptions* options, ControlState* state,
                             JobRegistry* registry, EventLog* events, StateStore* store,
                             Clock* clock, Clock* wall_clock, std::string state_id)
    : options_(options),
      state_(state),
      registry_(registry),
      events_(events),
      store_(store),
      clock_(clock),
      wall_clock_(wall_clock),
      state_id_(std::move(state_id)) {}

void GangLifecycle::Log(const absl::Status& s, const char* what) {
  if (!s.ok()) ACCEL_LOG(error, "{}: {}", what, std::string(s.message()));
}

absl::Status GangLifecycle::Recover() {
  absl::MutexLock order(&state_->order_mu);
  for (const JobRecord& job : registry_->List()) {
    if (IsTerminal(job.state)) continue;
    if (job.state == JobState::kStarting || job.state == JobState::kRunning) {
      // The attempt's row has its own start (the job's start_us is the first attempt's); an
      // acceld that stopped on SIGTERM already wrote how the attempt ended, which stays. Only
      // an attempt a killed acceld left open is closed here.
      ACCEL_ASSIGN_OR_RETURN(std::vector<AttemptRecord> attempts, store_->ListAttempts(job.id));
      AttemptRecord open{job.id, job.attempt, job.start_us, 0, ""};
      for (const AttemptRecord& a : attempts) {
        if (a.attempt == job.attempt) open = a;
      }
      // Workers a cluster runs do not die with acceld: stop what that attempt left running.
      GangRunner* runner = nullptr;
      {
        absl::MutexLock lock(&state_->mu);
        runner = state_->placement.RunnerFor(job);
      }
      if (Placement::IsRemote(job) && runner != nullptr && !open.placement.empty()) {
        runner->Forget(open.placement);
      }
      if (open.end_us == 0) {
        open.end_us = wall_clock_->NowMicros();
        open.outcome = "interrupted: acceld stopped";
        ACCEL_RETURN_IF_ERROR(store_->PutAttempt(open));
      }
      ACCEL_RETURN_IF_ERROR(
          registry_
              ->Transition(job.id, JobState::kRestarting,
                           absl::StrCat("acceld restarted; attempt ", job.attempt,
                                        "'s workers are gone; restarting without using a restart"))
              .status());
    }
    absl::Status s;
    {
      absl::MutexLock lock(&state_->mu);
      s = state_->placement.Enqueue(job);
    }
    if (!s.ok()) {
      EndJob(job.id, JobState::kFailed, std::string(s.message()), std::string(s.message()));
    }
  }
  return absl::OkStatus();
}

void GangLifecycle::Notice(const std::string& job_id, int attempt, const std::string& line) {
  Event e;
  e.job_id = job_id;
  e.attempt = attempt;
  e.rank = -1;
  e.kind = EventKind::kLog;
  e.body_json = nlohmann::json({{"stream", "acceld"}, {"line", line}}).dump();
  Log(events_->Append(std::move(e)).status(), "store notice");
}

void GangLifecycle::Drain() {
  absl::Duration longest = absl::ZeroDuration();
  {
    absl::MutexLock order(&state_->order_mu);
    std::vector<std::pair<Gang*, std::string>> notices;  // written once mu is released
    {
      absl::MutexLock lock(&state_->mu);
      const int64_t now = clock_->NowMicros();
      for (auto& [id, gang] : state_->workers.gangs()) {
        if (gang.ShouldCheckpointOnShutdown()) {
          gang.stop = StopReason::kShutdown;
          gang.checkpoint_deadline_us = now + absl::ToInt64Microseconds(gang.grace);
          gang.runner->RequestCheckpoint(id, gang.attempt);
          notices.emplace_back(
              &gang, absl::StrCat("acceld is stopping: asked the ", gang.ranks.size(),
                                  " ranks to checkpoint at the next step boundary (grace ",
                                  absl::FormatDuration(gang.grace), ")"));
          longest = std::max(longest, 2 * gang.grace);  // the checkpoint, then SIGTERM's grace
        } else {
          gang.Stop(StopReason::kShutdown, "acceld is shutting down");
          longest = std::max(longest, gang.grace);
        }
      }
    }
    // Gangs leave the table only under order_mu, so the pointers still hold.
    for (const auto& [gang, line] : notices) Notice(gang->job_id, gang->attempt, line);
  }
  const int64_t give_up =
      clock_->NowMicros() + absl::ToInt64Microseconds(longest + absl::Seconds(5));
  while (clock_->NowMicros() < give_up) {
    Tick();  // reaps, takes the checkpoint reports' exits, enforces the deadlines
    {
      absl::MutexLock lock(&state_->mu);
      int live = 0;
      for (const auto& [name, runner] : state_->placement.launchers()) live += runner->live();
      if (state_->workers.empty() && live == 0) return;
    }
    clock_->SleepForMicros(absl::ToInt64Microseconds(options_->tick_interval));
  }
  ACCEL_LOG(warn, "shutdown: workers still alive after the grace period");
}

absl::StatusOr<JobRecord> GangLifecycle::DeleteEnded(const std::string& job_id) {
  ACCEL_ASSIGN_OR_RETURN(const JobRecord current, registry_->Get(job_id));
  bool stopping = false;
  {
    absl::MutexLock lock(&state_->mu);
    stopping = state_->workers.Find(job_id) != nullptr;
  }
  if (IsTerminal(current.state) && stopping) {
    // Ended jobs have no gang; a gang still finishing means its ending is not written yet.
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " is still stopping its workers; delete it once it ended"));
  }
  ACCEL_ASSIGN_OR_RETURN(JobRecord job, registry_->Delete(job_id));
  events_->Forget(job_id);
  if (!options_->log_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::path(options_->log_dir) / job_id, ec);
    if (ec) ACCEL_LOG(warn, "deleted {} but not its logs: {}", job_id, ec.message());
  }
  return job;
}

void GangLifecycle::SweepRetention() {
  if (!options_->retention.enabled()) return;
  const int64_t now = clock_->NowMicros();
  if (last_sweep_us_ >= 0 &&
      now - last_sweep_us_ < absl::ToInt64Microseconds(options_->retention.sweep_interval)) {
    return;
  }
  last_sweep_us_ = now;
  for (const std::string& id :
       ExpiredJobs(registry_->List(), options_->retention, wall_clock_->NowMicros())) {
    absl::StatusOr<JobRecord> gone = DeleteEnded(id);
    if (gone.ok()) {
      ACCEL_LOG(info, "retention: forgot {} (ended {})", id, JobStateName(gone->state));
    } else {
      Log(gone.status(), "retention");
    }
  }
}

}  // namespace accel::server
