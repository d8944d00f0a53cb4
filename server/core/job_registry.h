// JobRegistry: every job acceld knows, and the only place a job's state changes. Each change is
// checked against the state machine (IsLegalTransition; an illegal one is FailedPrecondition and
// changes nothing) and stored together with its "state" event in one SQLite transaction, so the
// job row and the event stream never disagree, even across a crash.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/base/env.h"
#include "server/core/event_log.h"
#include "server/core/state_store.h"
#include "server/core/types.h"

namespace accel::server {

class JobRegistry {
 public:
  // Loads the jobs already in `store`. Does not own its arguments.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<JobRegistry>> Load(StateStore* store,
                                                                         EventLog* events,
                                                                         Clock* clock);

  // Stores a new QUEUED job from `job`'s name, spec_json, slots, priority and max_restarts;
  // assigns id, number and submit time. Emits the QUEUED state event.
  [[nodiscard]] absl::StatusOr<JobRecord> Create(const JobRecord& job);
  // NotFound for an unknown id.
  [[nodiscard]] absl::StatusOr<JobRecord> Get(const std::string& id) const;
  // Submission order.
  std::vector<JobRecord> List() const;

  // Moves the job to `to`: `mutate` may change the record's other fields (attempt, error, ...)
  // first; start and end times are set here. Stores the record and a state event carrying
  // `message`, atomically. FailedPrecondition for an illegal transition.
  [[nodiscard]] absl::StatusOr<JobRecord> Transition(
      const std::string& id, JobState to, const std::string& message,
      const std::function<void(JobRecord&)>& mutate = nullptr);
  // Forgets an ended job: its row, events, attempts and checkpoint records leave the store in
  // one transaction, and its id is never handed out again. Returns the job as it was.
  // NotFound for an unknown id; FailedPrecondition (changing nothing) unless it has ended.
  [[nodiscard]] absl::StatusOr<JobRecord> Delete(const std::string& id);
  // Updates fields that are not the state (last_step, ...), without an event.
  [[nodiscard]] absl::Status Update(const std::string& id,
                                    const std::function<void(JobRecord&)>& mutate);

 private:
  JobRegistry(StateStore* store, EventLog* events, Clock* clock)
      : store_(store), events_(events), clock_(clock) {}

  StateStore* const store_;
  EventLog* const events_;
  Clock* const clock_;
  mutable absl::Mutex mu_;
  std::map<int64_t, JobRecord> jobs_ ABSL_GUARDED_BY(mu_);  // by number
  std::map<std::string, int64_t> by_id_ ABSL_GUARDED_BY(mu_);
  int64_t next_number_ ABSL_GUARDED_BY(mu_) = 1;
};

// The body of a state event: {"state":"RUNNING","message":"..."} (accel.v1.StateEvent JSON).
std::string StateEventJson(JobState state, const std::string& message);

}  // namespace accel::server
