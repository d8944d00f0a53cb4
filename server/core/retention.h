// Retention: which ended jobs acceld forgets on its own, so its state (SQLite rows, events,
// rank logs) stays bounded on a long-running daemon. Like Kubernetes' ttlSecondsAfterFinished
// and Slurm's MaxJobCount, only ended jobs (SUCCEEDED, FAILED, CANCELLED) are ever chosen; a
// queued or running job is never touched. Checkpoints in a job's checkpoint.dir are the user's
// and are kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/types.h"

namespace accel::server {

struct RetentionPolicy {
  // Keep at most this many ended jobs (the ones that ended last); 0: no limit.
  int64_t keep_finished = 0;
  // Forget ended jobs once they ended this long ago; zero: never.
  absl::Duration finished_ttl = absl::ZeroDuration();
  // How often acceld applies the policy (also once at start).
  absl::Duration sweep_interval = absl::Seconds(60);

  bool enabled() const { return keep_finished > 0 || finished_ttl > absl::ZeroDuration(); }
};

// The ids of the ended jobs `policy` removes at `now_us`, the earliest ended first.
std::vector<std::string> ExpiredJobs(const std::vector<JobRecord>& jobs,
                                     const RetentionPolicy& policy, int64_t now_us);

// Parses a duration such as "90s", "30m", "12h", "7d" or "0" (never). InvalidArgument naming
// `flag` otherwise.
absl::StatusOr<absl::Duration> ParseRetentionDuration(const std::string& text,
                                                      const std::string& flag);

}  // namespace accel::server
