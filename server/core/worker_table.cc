#include "server/core/worker_table.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/status_macros.h"

namespace accel::server {

std::string RandomToken() {
  unsigned char bytes[32];
  bool ok = false;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ok = read(fd, bytes, sizeof(bytes)) == static_cast<ssize_t>(sizeof(bytes));
    close(fd);
  }
  if (!ok) {
    std::random_device rd;
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(rd());
  }
  std::string hex;
  for (unsigned char b : bytes) absl::StrAppendFormat(&hex, "%02x", b);
  return hex;
}

void Gang::Stop(StopReason reason, const std::string& error) {
  // A cancel or shutdown overrides a failure already being handled: the user's intent wins.
  if (stop == StopReason::kNone || reason == StopReason::kCancel ||
      reason == StopReason::kShutdown) {
    stop = reason;
  }
  if (first_error.empty() && !error.empty()) first_error = error;
  runner->Stop(job_id, attempt, grace);
}

bool Gang::AllExited() const {
  return std::all_of(ranks.begin(), ranks.end(), [](const RankState& r) { return r.exited; });
}

bool Gang::ShouldCheckpointOnShutdown() const {
  if (stop != StopReason::kNone || !can_checkpoint) return false;
  return std::all_of(ranks.begin(), ranks.end(),
                     [](const RankState& r) { return r.registered && !r.exited; });
}

absl::StatusOr<WorkerIdentity> WorkerTable::Authenticate(const std::string& token) const {
  auto it = tokens_.find(token);
  if (it == tokens_.end()) {
    return absl::UnauthenticatedError("unknown or expired worker token");
  }
  return it->second;
}

absl::StatusOr<Gang*> WorkerTable::Live(const WorkerIdentity& who) {
  auto it = gangs_.find(who.job_id);
  if (it == gangs_.end() || it->second.attempt != who.attempt) {
    return absl::FailedPreconditionError(absl::StrCat(
        "attempt ", who.attempt, " of job ", who.job_id, " is not running any more"));
  }
  return &it->second;
}

absl::StatusOr<Gang*> WorkerTable::Register(const WorkerIdentity& who, int rank, int64_t now_us) {
  ACCEL_ASSIGN_OR_RETURN(Gang * gang, Live(who));
  if (rank < 0 || rank >= static_cast<int>(gang->ranks.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is outside the job's ", gang->ranks.size(), " ranks"));
  }
  RankState& rs = gang->ranks[rank];
  if (rs.registered) {
    return absl::AlreadyExistsError(absl::StrCat("rank ", rank, " registered already"));
  }
  rs.registered = true;
  rs.last_seen_us = now_us;
  return gang;
}

absl::Status WorkerTable::Heartbeat(const WorkerIdentity& who, int rank, int64_t now_us) {
  ACCEL_ASSIGN_OR_RETURN(Gang * gang, Live(who));
  if (rank < 0 || rank >= static_cast<int>(gang->ranks.size())) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " is outside the job"));
  }
  gang->ranks[rank].last_seen_us = now_us;
  return absl::OkStatus();
}

Gang& WorkerTable::Add(Gang gang) {
  tokens_[gang.token] = WorkerIdentity{gang.job_id, gang.attempt};
  const std::string id = gang.job_id;
  Gang& stored = gangs_[id];
  stored = std::move(gang);
  return stored;
}

Gang WorkerTable::Take(const std::string& job_id) {
  auto it = gangs_.find(job_id);
  Gang gang = std::move(it->second);
  gangs_.erase(it);
  tokens_.erase(gang.token);
  return gang;
}

Gang* WorkerTable::Find(const std::string& job_id) {
  auto it = gangs_.find(job_id);
  return it == gangs_.end() ? nullptr : &it->second;
}

std::string WorkerTable::TokenOf(const std::string& job_id) const {
  auto it = gangs_.find(job_id);
  return it == gangs_.end() ? "" : it->second.token;
}

}  // namespace accel::server
