// JobTelemetry: the newest numbers of every unfinished job, kept in memory from the job's own
// event stream (EventLog's observer), so /metrics renders without reading SQLite: the last
// metrics record (step, loss, learning rate, grad norm, tokens/s, loss scale, step and exposed
// communication seconds), checkpoint totals, and per rank the newest memory record (pool x
// category, current and peak bytes) and traffic of the newest step with rank statistics.
// A job's numbers are dropped when it ends (its state event says so); a new attempt starts the
// per-rank numbers afresh. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "engine/base/memory_ledger.h"
#include "server/core/types.h"

namespace accel::server {

struct RankTelemetry {
  // pool ("compute", "host", "nvme") -> category ("params", ..., "total") -> bytes, from the
  // record's typed pools (old stored records are read into them by EventToProto).
  std::map<std::string, std::map<std::string, MemoryCounts>> memory;
  int64_t memory_step = -1;          // the step of that memory record (-1: after setup)
  int64_t step_bytes_sent = -1;      // during the newest step with rank statistics; -1: none
  int64_t step_bytes_received = -1;
};

struct JobTelemetrySnapshot {
  int attempt = 0;
  bool has_metrics = false;  // the fields below up to comm_seconds come from a metrics record
  int64_t step = -1;
  int64_t total_steps = 0;
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, loss_scale = 1;
  double step_seconds = 0, comm_seconds = 0;
  int64_t checkpoints = 0;  // written since acceld started following the job
  int64_t checkpoint_bytes = 0;
  double checkpoint_seconds = 0;
  int64_t last_checkpoint_step = -1;
  bool has_eval = false;  // an eval record arrived: the newest's loss and step, the lowest loss
  double eval_loss = 0, best_eval_loss = 0;
  int64_t eval_step = -1;
  std::map<int, RankTelemetry> ranks;
};

class JobTelemetry {
 public:
  // One stored batch of one job's events, in seq order (EventLog::SetObserver). Bodies that do
  // not parse are skipped (the event log keeps them; /metrics is best effort).
  void Observe(const std::vector<Event>& events);
  // Calls `visit` for the job's numbers, under the lock (keep it quick); false when it has none.
  bool Visit(const std::string& job_id,
             const std::function<void(const JobTelemetrySnapshot&)>& visit) const;
  size_t jobs() const;

 private:
  void ObserveOne(const Event& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, JobTelemetrySnapshot> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accel::server
