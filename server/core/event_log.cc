#include "server/core/event_log.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::server {

Subscription::~Subscription() { log_->Unsubscribe(this); }

int64_t Subscription::Deliver(const std::vector<Event>& events) {
  absl::MutexLock lock(&mu_);
  int64_t dropped = 0;
  for (const Event& e : events) {
    published_ = std::max(published_, e.seq);
    if (e.seq <= cursor_) continue;
    // Only a contiguous run is kept; anything else is read back from SQLite.
    if (overflowed_ || (!queue_.empty() && e.seq != queue_.back().seq + 1)) {
      ++dropped;
      continue;
    }
    if (queue_.size() >= capacity_) {
      // Fall behind: drop the buffer (memory stays bounded) and catch up from SQLite.
      overflowed_ = true;
      dropped += static_cast<int64_t>(queue_.size()) + 1;
      queue_.clear();
      ++fallbacks_;
      continue;
    }
    queue_.push_back(e);
  }
  return dropped;
}

absl::StatusOr<std::vector<Event>> Subscription::Next(absl::Duration timeout, size_t max_events) {
  int64_t from;
  {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return interrupted_ || published_ > cursor_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
    if (interrupted_) {
      interrupted_ = false;
      if (published_ <= cursor_) return std::vector<Event>{};
    }
    if (published_ <= cursor_) return std::vector<Event>{};
    while (!queue_.empty() && queue_.front().seq <= cursor_) queue_.pop_front();
    if (!overflowed_ && !queue_.empty() && queue_.front().seq == cursor_ + 1) {
      std::vector<Event> out;
      while (!queue_.empty() && out.size() < max_events) {
        out.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      cursor_ = out.back().seq;
      return out;
    }
    // The next event is not buffered (replay, overflow, or a gap): read SQLite. Events that
    // arrive meanwhile queue up again from here; duplicates are skipped by seq.
    overflowed_ = false;
    queue_.clear();
    from = cursor_;
  }
  ACCEL_ASSIGN_OR_RETURN(std::vector<Event> events,
                         log_->Read(job_id_, from, static_cast<int64_t>(max_events)));
  absl::MutexLock lock(&mu_);
  // Only the subscriber's own thread moves the cursor, so it is still `from`.
  if (!events.empty()) cursor_ = events.back().seq;
  return events;
}

void Subscription::Interrupt() {
  absl::MutexLock lock(&mu_);
  interrupted_ = true;
}

int64_t Subscription::cursor() const {
  absl::MutexLock lock(&mu_);
  return cursor_;
}

int64_t Subscription::fallbacks() const {
  absl::MutexLock lock(&mu_);
  return fallbacks_;
}

size_t Subscription::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

EventLog::EventLog(StateStore* store, Clock* clock, size_t queue_capacity)
    : store_(store), clock_(clock), queue_capacity_(std::max<size_t>(queue_capacity, 1)) {}

absl::StatusOr<int64_t> EventLog::LastSeqLocked(const std::string& job_id) {
  auto it = last_seq_.find(job_id);
  if (it != last_seq_.end()) return it->second;
  ACCEL_ASSIGN_OR_RETURN(int64_t seq, store_->LastSeq(job_id));
  last_seq_[job_id] = seq;
  return seq;
}

absl::StatusOr<int64_t> EventLog::LastSeq(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  return LastSeqLocked(job_id);
}

absl::Status EventLog::Append(std::vector<Event>& events, const JobRecord* job) {
  if (events.empty()) return job ? store_->PutJob(*job) : absl::OkStatus();
  const std::string& job_id = events.front().job_id;
  for (const Event& e : events) {
    if (e.job_id != job_id) {
      return absl::InternalError(absl::StrCat("EventLog::Append mixes jobs ", job_id, " and ",
                                              e.job_id));
    }
  }
  absl::MutexLock lock(&mu_);
  ACCEL_ASSIGN_OR_RETURN(int64_t seq, LastSeqLocked(job_id));
  const int64_t now = clock_->NowMicros();
  for (Event& e : events) {
    e.seq = ++seq;
    e.time_us = now;
  }
  absl::Status s = store_->Write(job, events);
  if (!s.ok()) {
    for (Event& e : events) e.seq = 0;
    return s;
  }
  last_seq_[job_id] = seq;
  auto it = subs_.find(job_id);
  if (it != subs_.end()) {
    for (Subscription* sub : it->second) dropped_events_ += sub->Deliver(events);
  }
  if (observer_) observer_(events);
  return absl::OkStatus();
}

absl::StatusOr<Event> EventLog::Append(Event event) {
  std::vector<Event> events{std::move(event)};
  ACCEL_RETURN_IF_ERROR(Append(events));
  return std::move(events.front());
}

absl::StatusOr<std::unique_ptr<Subscription>> EventLog::Subscribe(const std::string& job_id,
                                                                  int64_t from_seq) {
  absl::MutexLock lock(&mu_);
  ACCEL_ASSIGN_OR_RETURN(int64_t last, LastSeqLocked(job_id));
  std::unique_ptr<Subscription> sub(
      new Subscription(this, job_id, std::max<int64_t>(from_seq, 0), queue_capacity_));
  {
    absl::MutexLock sub_lock(&sub->mu_);
    sub->published_ = last;
  }
  subs_[job_id].insert(sub.get());
  return sub;
}

void EventLog::Unsubscribe(Subscription* sub) {
  absl::MutexLock lock(&mu_);
  auto it = subs_.find(sub->job_id_);
  if (it == subs_.end()) return;
  it->second.erase(sub);
  if (it->second.empty()) subs_.erase(it);
}

void EventLog::Forget(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  last_seq_.erase(job_id);
  auto it = subs_.find(job_id);
  if (it == subs_.end()) return;
  for (Subscription* sub : it->second) sub->Interrupt();
}

size_t EventLog::subscribers() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [job, subs] : subs_) n += subs.size();
  return n;
}

int64_t EventLog::dropped_events() const {
  absl::MutexLock lock(&mu_);
  return dropped_events_;
}

void EventLog::SetObserver(Observer observer) {
  absl::MutexLock lock(&mu_);
  observer_ = std::move(observer);
}

}  // namespace accel::server
