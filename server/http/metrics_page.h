// The /metrics page: everything acceld knows, in the Prometheus text format, rendered on each
// scrape from in-memory state (no SQLite reads). Families (docs/observability.md):
//   daemon: accel_build_info, accel_jobs{state}, accel_queue_length, accel_slots{pool},
//           accel_slots_in_use{pool}, accel_watchers, accel_watch_dropped_events_total,
//           accel_rpc_requests_total, accel_rpc_duration_seconds (RpcMetrics);
//   per unfinished job (label job_id; accel_job_info adds job_name and state): attempt,
//           restarts, step, target steps, loss, learning rate, grad norm, tokens/s, loss scale,
//           step and exposed communication seconds, checkpoints written / bytes / seconds;
//   per rank of those jobs (job_id, rank): memory by pool and category, current and peak;
//           bytes sent and received in the newest step with rank statistics.
// Labels say job_id rather than job: Prometheus itself puts `job` (the scrape job) on every
// series, and a target's own `job` label would be renamed exported_job.
#pragma once

#include <functional>
#include <string>

#include "server/core/event_log.h"
#include "server/core/job_manager.h"
#include "server/core/job_registry.h"
#include "server/http/job_telemetry.h"
#include "server/services/rpc_metrics.h"

namespace accel::server {

struct MetricsSources {
  const JobRegistry* registry = nullptr;
  std::function<ClusterView()> cluster;  // JobManager::Cluster
  const EventLog* events = nullptr;
  const JobTelemetry* telemetry = nullptr;
  const RpcMetrics* rpc = nullptr;  // optional
  std::string version;
};

std::string RenderMetrics(const MetricsSources& sources);

}  // namespace accel::server
