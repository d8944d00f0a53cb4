#include "server/core/types.h"

#include "absl/strings/str_cat.h"

namespace accel::server {

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued: return "QUEUED";
    case JobState::kStarting: return "STARTING";
    case JobState::kRunning: return "RUNNING";
    case JobState::kRestarting: return "RESTARTING";
    case JobState::kSucceeded: return "SUCCEEDED";
    case JobState::kFailed: return "FAILED";
    case JobState::kCancelled: return "CANCELLED";
  }
  return "UNKNOWN";
}

absl::StatusOr<JobState> ParseJobState(std::string_view name) {
  for (int i = 1; i <= 7; ++i) {
    if (JobStateName(static_cast<JobState>(i)) == name) return static_cast<JobState>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown job state ", std::string(name)));
}

bool IsTerminal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled;
}

bool IsLegalTransition(JobState from, JobState to) {
  using S = JobState;
  switch (from) {
    // FAILED from QUEUED / RESTARTING: the job can never be placed or its workers cannot start.
    case S::kQueued: return to == S::kStarting || to == S::kCancelled || to == S::kFailed;
    // A gang that dies before every rank registered fails or restarts from STARTING.
    case S::kStarting:
      return to == S::kRunning || to == S::kRestarting || to == S::kFailed || to == S::kCancelled;
    case S::kRunning:
      return to == S::kSucceeded || to == S::kFailed || to == S::kRestarting ||
             to == S::kCancelled;
    case S::kRestarting:
      return to == S::kStarting || to == S::kCancelled || to == S::kFailed;
    case S::kSucceeded:
    case S::kFailed:
    case S::kCancelled: return false;
  }
  return false;
}

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kState: return "state";
    case EventKind::kMetrics: return "metrics";
    case EventKind::kMemory: return "memory";
    case EventKind::kCheckpoint: return "checkpoint";
    case EventKind::kLog: return "log";
    case EventKind::kEval: return "eval";
    case EventKind::kSample: return "sample";
  }
  return "unknown";
}

absl::StatusOr<EventKind> ParseEventKind(std::string_view name) {
  for (int i = 1; i <= 7; ++i) {
    if (EventKindName(static_cast<EventKind>(i)) == name) return static_cast<EventKind>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown event kind ", std::string(name)));
}

const char* DeviceKindName(DeviceKind kind) {
  return kind == DeviceKind::kCuda ? "cuda" : "cpu";
}

absl::StatusOr<DeviceKind> ParseDeviceKind(std::string_view name) {
  if (name == "cpu" || name.empty()) return DeviceKind::kCpu;
  if (name == "cuda") return DeviceKind::kCuda;
  return absl::InvalidArgumentError(
      absl::StrCat("resources.device: must be cpu or cuda, got '", std::string(name), "'"));
}

}  // namespace accel::server
