// JobManager's ending half (job_manager.h): how attempts and jobs end — a rank's exit, the
// gang's end (restart, resume or finish) — and the periodic tick that notices silent ranks and
// starts what the schedulers admit.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/job_manager.h"  // IWYU pragma: associated

namespace accel::server {

void JobManager::EndJob(const std::string& job_id, JobState state, const std::string& message,
                        const std::string& error) {
  Unschedule(job_id);
  Log(registry_
          ->Transition(job_id, state, message,
                       [&](JobRecord& j) {
                         if (!error.empty()) j.error = error;
                         // An earlier attempt's failure is history (the attempts table keeps
                         // it); a job that succeeded shows no error.
                         if (state == JobState::kSucceeded) j.error.clear();
                       })
          .status(),
      "end job");
}

void JobManager::EndAttempt(const Gang& gang, const std::string& outcome) {
  Log(store_->PutAttempt(
          {gang.job_id, gang.attempt, gang.start_us, wall_clock_->NowMicros(), outcome,
           gang.placement}),
      "store attempt");
}

void JobManager::HandleExit(const RankExit& exit) {
  auto it = gangs_.find(exit.job_id);
  if (it == gangs_.end() || it->second.attempt != exit.attempt) return;  // an old attempt
  Gang& gang = it->second;
  if (exit.rank < 0 || exit.rank >= static_cast<int>(gang.ranks.size())) return;
  RankState& rs = gang.ranks[exit.rank];
  rs.exited = true;
  rs.exit_ok = exit.ok() && rs.registered;
  rs.checkpointed = exit.checkpointed() && rs.registered;
  if (gang.stop != StopReason::kNone) return;
  if (rs.exit_ok) return;
  std::string error = absl::StrCat("rank ", exit.rank, " ", exit.Describe());
  if (exit.ok()) absl::StrAppend(&error, " without registering with acceld");
  // A rank that exited names its error on its last line; a killed one was cut off wherever it
  // was, so its last line (a progress or info line) says nothing about why.
  if (!exit.log_tail.empty() && exit.signal == 0) {
    std::string tail = exit.log_tail;
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    absl::StrAppend(&error, ": ", tail.substr(tail.rfind('\n') == std::string::npos
                                                  ? 0
                                                  : tail.rfind('\n') + 1));
  }
  StopGang(gang, StopReason::kFailure, error);
}

void JobManager::FinishGang(const std::string& job_id) {
  auto it = gangs_.find(job_id);
  Gang gang = std::move(it->second);
  gangs_.erase(it);
  tokens_.erase(gang.token);
  absl::StatusOr<JobRecord> job = registry_->Get(job_id);
  if (!job.ok()) return;
  // Asked to checkpoint during the last step, the ranks simply finished.
  if (gang.stop == StopReason::kShutdown &&
      std::all_of(gang.ranks.begin(), gang.ranks.end(),
                  [](const RankState& r) { return r.exit_ok; })) {
    gang.stop = StopReason::kNone;
  }
  switch (gang.stop) {
    case StopReason::kNone:
      EndAttempt(gang, "succeeded");
      EndJob(job_id, JobState::kSucceeded,
             absl::StrCat("all ", gang.ranks.size(), " ranks finished"), "");
      return;
    case StopReason::kCancel:
      EndAttempt(gang, "cancelled");
      EndJob(job_id, JobState::kCancelled, "cancelled by the user; every worker has exited", "");
      return;
    case StopReason::kShutdown: {
      const bool saved = std::all_of(gang.ranks.begin(), gang.ranks.end(),
                                     [](const RankState& r) { return r.checkpointed; });
      EndAttempt(gang, saved ? "interrupted: acceld stopped after a checkpoint on request"
                             : "interrupted: acceld stopped");
      return;  // the state stays; the next acceld restarts the job
    }
    case StopReason::kFailure:
      break;
  }
  EndAttempt(gang, absl::StrCat("failed: ", gang.first_error));
  if (job->restarts_used < job->max_restarts) {
    const int used = job->restarts_used + 1;
    absl::StatusOr<JobRecord> restarting = registry_->Transition(
        job_id, JobState::kRestarting,
        absl::StrCat(gang.first_error, "; restart ", used, " of ", job->max_restarts,
                     " (from the latest checkpoint, if any)"),
        [&](JobRecord& j) {
          j.restarts_used = used;
          j.error = gang.first_error;
        });
    if (!restarting.ok()) {
      Log(restarting.status(), "restart");
      return;
    }
    StartAttempt(*restarting, "restarting: ");  // keeps its slots
    return;
  }
  EndJob(job_id, JobState::kFailed,
         job->max_restarts > 0
             ? absl::StrCat(gang.first_error, " (all ", job->max_restarts, " restarts used)")
             : gang.first_error,
         gang.first_error);
}

void JobManager::Tick() {
  absl::MutexLock lock(&mu_);
  PollResult poll;
  for (const auto& [name, runner] : launchers_) {
    PollResult one = runner->Poll();
    for (RankExit& x : one.exits) poll.exits.push_back(std::move(x));
    for (RankLogLine& l : one.lines) poll.lines.push_back(std::move(l));
  }
  if (!poll.lines.empty()) {
    // One transaction per job.
    std::map<std::string, std::vector<Event>> by_job;
    for (RankLogLine& l : poll.lines) {
      nlohmann::json body = {{"stream", "output"}, {"line", std::move(l.line)}};
      Event e;
      e.job_id = l.job_id;
      e.attempt = l.attempt;
      e.rank = l.rank;
      e.kind = EventKind::kLog;
      e.body_json = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      by_job[l.job_id].push_back(std::move(e));
    }
    for (auto& [job, events] : by_job) Log(events_->Append(events), "store log lines");
  }
  // Ranks that died together (one poll) are ordered so that a rank killed by a signal comes
  // before ranks that exited with an error: a rank SIGKILLed or crashed from outside is the root
  // cause far more often than the peers whose collectives then failed.
  std::stable_sort(poll.exits.begin(), poll.exits.end(), [](const RankExit& a, const RankExit& b) {
    return (a.signal != 0) > (b.signal != 0);
  });
  for (const RankExit& e : poll.exits) HandleExit(e);

  const int64_t now = clock_->NowMicros();
  std::vector<std::string> finished;
  for (auto& [id, gang] : gangs_) {
    if (gang.checkpoint_deadline_us >= 0 && now >= gang.checkpoint_deadline_us) {
      // Asked to checkpoint, some rank has not finished within the grace period.
      ACCEL_LOG(warn, "{} attempt {}: no checkpoint within the grace period; stopping the gang",
                id, gang.attempt);
      gang.checkpoint_deadline_us = -1;
      gang.runner->Stop(id, gang.attempt, gang.grace);
    }
    // Queued in the cluster: no rank can register yet, so no deadline runs.
    if (gang.stop == StopReason::kNone && gang.runner->Pending(id, gang.attempt)) {
      for (RankState& rs : gang.ranks) rs.last_seen_us = now;
    }
    if (gang.stop == StopReason::kNone) {
      for (size_t r = 0; r < gang.ranks.size(); ++r) {
        const RankState& rs = gang.ranks[r];
        if (rs.exited) continue;
        const absl::Duration silent = absl::Microseconds(now - rs.last_seen_us);
        if (silent > gang.heartbeat_timeout) {
          StopGang(gang, StopReason::kFailure,
                   absl::StrFormat("rank %d sent no heartbeat for %.0fs (%s)", r,
                                   absl::ToDoubleSeconds(silent),
                                   rs.registered ? "hung?" : "never registered"));
          break;
        }
      }
    }
    const bool all_exited = std::all_of(gang.ranks.begin(), gang.ranks.end(),
                                        [](const RankState& r) { return r.exited; });
    if (all_exited) finished.push_back(id);
  }
  for (const std::string& id : finished) FinishGang(id);

  if (shutting_down_) return;
  SweepRetention();
  std::vector<std::string> remote;
  remote.swap(remote_ready_);
  for (const std::string& id : remote) {
    absl::StatusOr<JobRecord> job = registry_->Get(id);
    if (job.ok()) StartAttempt(*job, job->state == JobState::kRestarting ? "resuming: " : "");
  }
  for (Scheduler* pool : {&scheduler_, &gpu_scheduler_}) {
    for (const Scheduler::Placement& p : pool->Schedule()) {
      absl::StatusOr<JobRecord> job = registry_->Get(p.job_id);
      if (!job.ok()) continue;
      StartAttempt(*job, job->state == JobState::kRestarting ? "resuming: " : "");
    }
  }
}

}  // namespace accel::server
