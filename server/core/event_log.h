// EventLog: the per-job event stream. Append assigns the next sequence number of the job (1, 2,
// 3, ... without gaps), writes the events to SQLite (optionally with the job row, in one
// transaction) and only then hands them to the job's subscribers — nothing is shown before it
// is durable.
//
// Subscribers (WatchJob) each hold a bounded queue. A subscriber that falls behind loses its
// queue (memory stays bounded: capacity x event size per watcher) and reads the missing events
// back from SQLite from its cursor, so it never misses one and never sees one twice. A watcher
// that reconnects subscribes again with the last sequence it saw.
// Thread-safe. Lock order: EventLog::mu_ before Subscription::mu_.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/base/env.h"
#include "server/core/state_store.h"
#include "server/core/types.h"

namespace accel::server {

class EventLog;

class Subscription {
 public:
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // The events after the cursor, in order, at most `max_events`; waits up to `timeout` when
  // there are none (then returns an empty vector). Advances the cursor. Errors are SQLite's.
  [[nodiscard]] absl::StatusOr<std::vector<Event>> Next(absl::Duration timeout,
                                                        size_t max_events = 256);
  // Wakes a waiting Next, which then returns what it has (possibly nothing).
  void Interrupt();
  int64_t cursor() const;
  // How many times this subscriber overflowed its queue and fell back to SQLite.
  int64_t fallbacks() const;
  size_t queued() const;

 private:
  friend class EventLog;
  Subscription(EventLog* log, std::string job_id, int64_t from_seq, size_t capacity)
      : log_(log), job_id_(std::move(job_id)), cursor_(from_seq), capacity_(capacity) {}
  // Called by EventLog under its lock, with events in sequence order. Returns how many of them
  // past the cursor it did not queue (dropped: the subscriber reads them back from SQLite).
  int64_t Deliver(const std::vector<Event>& events);

  EventLog* const log_;
  const std::string job_id_;
  mutable absl::Mutex mu_;
  int64_t cursor_ ABSL_GUARDED_BY(mu_);
  int64_t published_ ABSL_GUARDED_BY(mu_) = 0;  // newest seq known to exist
  std::deque<Event> queue_ ABSL_GUARDED_BY(mu_);  // a contiguous run of seqs, or empty
  bool overflowed_ ABSL_GUARDED_BY(mu_) = false;
  bool interrupted_ ABSL_GUARDED_BY(mu_) = false;
  int64_t fallbacks_ ABSL_GUARDED_BY(mu_) = 0;
  const size_t capacity_;
};

class EventLog {
 public:
  // Does not own store or clock. queue_capacity: events buffered per subscriber.
  EventLog(StateStore* store, Clock* clock, size_t queue_capacity = 128);

  // Assigns seq and time to each event (all of one job), stores them together with `job` when
  // given, then publishes. On error nothing was stored or published and the sequence is unchanged.
  [[nodiscard]] absl::Status Append(std::vector<Event>& events, const JobRecord* job = nullptr);
  [[nodiscard]] absl::StatusOr<Event> Append(Event event);
  // Newest seq of the job (0: none).
  [[nodiscard]] absl::StatusOr<int64_t> LastSeq(const std::string& job_id);
  // Events after from_seq, then live ones. The subscription unregisters itself when destroyed.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Subscription>> Subscribe(const std::string& job_id,
                                                                        int64_t from_seq);
  [[nodiscard]] absl::StatusOr<std::vector<Event>> Read(const std::string& job_id,
                                                        int64_t after_seq, int64_t limit) {
    return store_->ReadEvents(job_id, after_seq, limit);
  }
  size_t subscribers() const;
  // Events subscribers' queues dropped since start (each re-read from SQLite by its subscriber:
  // a measure of watchers falling behind, not of lost events).
  int64_t dropped_events() const;

  // Called with every appended batch (one job, ascending seq) once it is stored, under the
  // log's lock so batches arrive in order; it must be quick and must not call the EventLog.
  // Set once, before events are appended (acceld: the /metrics telemetry).
  using Observer = std::function<void(const std::vector<Event>&)>;
  void SetObserver(Observer observer);
  // Drops what is cached about a deleted job and wakes its subscribers (whose reads then find
  // nothing; WatchJob ends them with NotFound).
  void Forget(const std::string& job_id);

 private:
  friend class Subscription;
  [[nodiscard]] absl::StatusOr<int64_t> LastSeqLocked(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unsubscribe(Subscription* sub);

  StateStore* const store_;
  Clock* const clock_;
  const size_t queue_capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, int64_t> last_seq_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::set<Subscription*>> subs_ ABSL_GUARDED_BY(mu_);
  int64_t dropped_events_ ABSL_GUARDED_BY(mu_) = 0;
  Observer observer_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accel::server
