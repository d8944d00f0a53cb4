// GangLifecycle (gang_lifecycle.h): how attempts and jobs end — a rank's exit, the gang's end
// (restart, resume or finish) — and the periodic tick that reaps the launchers, notices silent
// ranks and starts what the placement admits. Each tick: poll the launchers and store their
// output lines (no state lock); decide under the state lock (exits, deadlines, which gangs are
// over, taking them out of the WorkerTable); then write each ending and start what is ready,
// with the state lock released.
#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/logging.h"
#include "nlohmann/json.hpp"
#include "server/core/gang_lifecycle.h"  // IWYU pragma: associated

namespace accel::server {

void GangLifecycle::EndJob(const std::string& job_id, JobState state, const std::string& message,
                           const std::string& error) {
  {
    absl::MutexLock lock(&state_->mu);
    state_->placement.Unschedule(job_id);
  }
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

void GangLifecycle::EndAttempt(const Gang& gang, const std::string& outcome) {
  Log(store_->PutAttempt({gang.job_id, gang.attempt, gang.start_us, wall_clock_->NowMicros(),
                          outcome, gang.placement}),
      "store attempt");
}

void GangLifecycle::HandleExit(const RankExit& exit) {
  Gang* found = state_->workers.Find(exit.job_id);
  if (found == nullptr || found->attempt != exit.attempt) return;  // an old attempt
  Gang& gang = *found;
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
  gang.Stop(StopReason::kFailure, error);
}

void GangLifecycle::FinishGang(Gang gang) {
  const std::string& job_id = gang.job_id;
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

void GangLifecycle::Tick() {
  absl::MutexLock order(&state_->order_mu);
  TickLocked();
}

void GangLifecycle::TickLocked() {
  // The launchers are fixed once acceld runs, and only order_mu's holder calls them.
  std::map<std::string, GangRunner*> launchers;
  {
    absl::MutexLock lock(&state_->mu);
    launchers = state_->placement.launchers();
  }
  PollResult poll;
  for (const auto& [name, runner] : launchers) {
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

  std::vector<Gang> finished;
  bool shutting_down = false;
  {
    absl::MutexLock lock(&state_->mu);
    for (const RankExit& e : poll.exits) HandleExit(e);
    const int64_t now = clock_->NowMicros();
    std::vector<std::string> over;
    for (auto& [id, gang] : state_->workers.gangs()) {
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
            gang.Stop(StopReason::kFailure,
                      absl::StrFormat("rank %d sent no heartbeat for %.0fs (%s)", r,
                                      absl::ToDoubleSeconds(silent),
                                      rs.registered ? "hung?" : "never registered"));
            break;
          }
        }
      }
      if (gang.AllExited()) over.push_back(id);
    }
    // Out of the table now: their tokens die with the attempt.
    for (const std::string& id : over) finished.push_back(state_->workers.Take(id));
    shutting_down = state_->shutting_down;
  }
  for (Gang& gang : finished) FinishGang(std::move(gang));

  if (shutting_down) return;
  SweepRetention();
  std::vector<std::string> ready;
  {
    absl::MutexLock lock(&state_->mu);
    ready = state_->placement.Ready();
  }
  for (const std::string& id : ready) {
    absl::StatusOr<JobRecord> job = registry_->Get(id);
    if (job.ok()) StartAttempt(*job, job->state == JobState::kRestarting ? "resuming: " : "");
  }
}

}  // namespace accel::server
