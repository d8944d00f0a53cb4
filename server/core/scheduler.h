// Scheduler: gang allocation of a fixed pool of slots (CPU slots, or GPUs later). A job needs
// all of its slots at once or none (no partial placement). The queue is ordered by priority
// (higher first), then submission order; the head of the queue blocks the ones behind it even
// when they would fit (no backfill), so a big job is never starved by a stream of small ones.
// Plain data structure, not thread-safe: JobManager calls it under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace accel::server {

class Scheduler {
 public:
  explicit Scheduler(int total_slots);

  // InvalidArgument when the job needs no slot or more than exist; AlreadyExists when queued or
  // placed already. `order` is the FIFO key among equal priorities (the job number).
  [[nodiscard]] absl::Status Enqueue(const std::string& job_id, int slots, int priority,
                                     int64_t order);
  // Takes a queued job out of the queue; false when it was not queued.
  bool Remove(const std::string& job_id);
  // Frees a placed job's slots; false when it held none.
  bool Release(const std::string& job_id);

  struct Placement {
    std::string job_id;
    std::vector<int> slots;  // slot indices, ascending
  };
  // Places queued jobs from the head while they fit (lowest free slot indices first).
  std::vector<Placement> Schedule();

  int total_slots() const { return total_slots_; }
  int free_slots() const;
  // Queued job ids in the order they will be placed.
  std::vector<std::string> Queue() const;
  const std::map<std::string, std::vector<int>>& allocations() const { return placed_; }

 private:
  struct Key {
    int priority;
    int64_t order;
    bool operator<(const Key& o) const {
      return priority != o.priority ? priority > o.priority : order < o.order;
    }
  };
  struct Pending {
    std::string job_id;
    int slots;
  };
  const int total_slots_;
  std::vector<bool> used_;
  std::map<Key, Pending> queue_;
  std::map<std::string, std::vector<int>> placed_;
};

}  // namespace accel::server
