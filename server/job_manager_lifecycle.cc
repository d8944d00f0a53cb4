// JobManager's lifecycle half (job_manager.h): recovering what an earlier acceld left, the
// control loop thread, and the shutdown that lets running gangs checkpoint before they stop.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/job_manager.h"  // IWYU pragma: associated

namespace accel::server {

absl::Status JobManager::Recover() {
  absl::MutexLock lock(&mu_);
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
      GangRunner* runner = RunnerFor(job);
      if (IsRemote(job) && runner != nullptr && !open.placement.empty()) {
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
    absl::Status s = Enqueue(job);
    if (!s.ok()) {
      EndJob(job.id, JobState::kFailed, std::string(s.message()), std::string(s.message()));
    }
  }
  return absl::OkStatus();
}

void JobManager::Start() {
  loop_ = std::thread([this] {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (loop_stop_) return;
        if (shutting_down_) break;
      }
      Tick();
      clock_->SleepForMicros(absl::ToInt64Microseconds(options_.tick_interval));
    }
    // The workers' parent-death signal fires when the thread that forked them exits, so the
    // thread that launched them also sees them out.
    Drain();
  });
}

void JobManager::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  if (loop_.joinable()) {
    loop_.join();
  } else {
    Drain();  // no control loop (tests): this thread drives the runner
  }
}

bool JobManager::ShouldCheckpointOnShutdown(const Gang& gang) const {
  if (gang.stop != StopReason::kNone || !gang.can_checkpoint) return false;
  return std::all_of(gang.ranks.begin(), gang.ranks.end(),
                     [](const RankState& r) { return r.registered && !r.exited; });
}

void JobManager::Notice(const std::string& job_id, int attempt, const std::string& line) {
  Event e;
  e.job_id = job_id;
  e.attempt = attempt;
  e.rank = -1;
  e.kind = EventKind::kLog;
  e.body_json = nlohmann::json({{"stream", "acceld"}, {"line", line}}).dump();
  Log(events_->Append(std::move(e)).status(), "store notice");
}

void JobManager::Drain() {
  absl::Duration longest = absl::ZeroDuration();
  {
    absl::MutexLock lock(&mu_);
    const int64_t now = clock_->NowMicros();
    for (auto& [id, gang] : gangs_) {
      if (ShouldCheckpointOnShutdown(gang)) {
        gang.stop = StopReason::kShutdown;
        gang.checkpoint_deadline_us = now + absl::ToInt64Microseconds(gang.grace);
        gang.runner->RequestCheckpoint(id, gang.attempt);
        Notice(id, gang.attempt,
               absl::StrCat("acceld is stopping: asked the ", gang.ranks.size(),
                            " ranks to checkpoint at the next step boundary (grace ",
                            absl::FormatDuration(gang.grace), ")"));
        longest = std::max(longest, 2 * gang.grace);  // the checkpoint, then SIGTERM's grace
      } else {
        StopGang(gang, StopReason::kShutdown, "acceld is shutting down");
        longest = std::max(longest, gang.grace);
      }
    }
  }
  const int64_t give_up =
      clock_->NowMicros() + absl::ToInt64Microseconds(longest + absl::Seconds(5));
  while (clock_->NowMicros() < give_up) {
    Tick();  // reaps, takes the checkpoint reports' exits, enforces the deadlines
    {
      absl::MutexLock lock(&mu_);
      int live = 0;
      for (const auto& [name, runner] : launchers_) live += runner->live();
      if (gangs_.empty() && live == 0) return;
    }
    clock_->SleepForMicros(absl::ToInt64Microseconds(options_.tick_interval));
  }
  ACCEL_LOG(warn, "shutdown: workers still alive after the grace period");
}

}  // namespace accel::server
