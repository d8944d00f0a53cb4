#include "server/core/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace accel::server {

Scheduler::Scheduler(int total_slots)
    : total_slots_(std::max(total_slots, 0)), used_(std::max(total_slots, 0), false) {}

absl::Status Scheduler::Enqueue(const std::string& job_id, int slots, int priority,
                                int64_t order) {
  if (slots < 1 || slots > total_slots_) {
    return absl::InvalidArgumentError(absl::StrCat("job ", job_id, " needs ", slots,
                                                   " slots; this acceld has ", total_slots_));
  }
  if (placed_.count(job_id) > 0) {
    return absl::AlreadyExistsError(absl::StrCat("job ", job_id, " already holds slots"));
  }
  for (const auto& [key, pending] : queue_) {
    if (pending.job_id == job_id) {
      return absl::AlreadyExistsError(absl::StrCat("job ", job_id, " is already queued"));
    }
  }
  queue_[Key{priority, order}] = Pending{job_id, slots};
  return absl::OkStatus();
}

bool Scheduler::Remove(const std::string& job_id) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->second.job_id == job_id) {
      queue_.erase(it);
      return true;
    }
  }
  return false;
}

bool Scheduler::Release(const std::string& job_id) {
  auto it = placed_.find(job_id);
  if (it == placed_.end()) return false;
  for (int s : it->second) used_[s] = false;
  placed_.erase(it);
  return true;
}

std::vector<Scheduler::Placement> Scheduler::Schedule() {
  std::vector<Placement> out;
  while (!queue_.empty()) {
    auto head = queue_.begin();
    if (head->second.slots > free_slots()) break;  // strict order: no backfill
    Placement p{head->second.job_id, {}};
    for (int s = 0; s < total_slots_ && static_cast<int>(p.slots.size()) < head->second.slots;
         ++s) {
      if (!used_[s]) {
        used_[s] = true;
        p.slots.push_back(s);
      }
    }
    placed_[p.job_id] = p.slots;
    queue_.erase(head);
    out.push_back(std::move(p));
  }
  return out;
}

int Scheduler::free_slots() const {
  return static_cast<int>(std::count(used_.begin(), used_.end(), false));
}

std::vector<std::string> Scheduler::Queue() const {
  std::vector<std::string> out;
  for (const auto& [key, pending] : queue_) out.push_back(pending.job_id);
  return out;
}

}  // namespace accel::server
