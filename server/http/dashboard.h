// acceld's web dashboard and the read-only JSON API it draws from (docs/observability.md
// "Dashboard"). The page, its script and its style sheet are the project's own files
// (server/http/web/), built into the binary; the browser fetches nothing from anywhere else.
//
// Routes (all GET; the caller's HTTP server checks the bearer token before they run):
//   /  /dashboard.js  /dashboard.css         the page
//   /api/v1/jobs                             {"jobs":[Job...], "metrics":{id: MetricsEvent}}
//   /api/v1/jobs/{id}                        Job
//   /api/v1/jobs/{id}/events?after=N&limit=M {"events":[Event...], "last_seq":N}
//   /api/v1/jobs/{id}/checkpoints            {"checkpoints":[Checkpoint...]}
//   /api/v1/cluster                          Cluster (as GetCluster answers)
// Job, Event, ... are the accel.v1 messages in proto3 JSON with the .proto field names (int64
// fields are strings there). Errors: {"error":{"code":"NOT_FOUND","message":"..."}} with 400
// for a bad id or parameter, 404 for an unknown job or route, 500 for the store's errors.
#pragma once

#include <string>

#include "server/core/event_log.h"
#include "server/http/http_routes.h"
#include "server/core/job_manager.h"
#include "server/core/job_registry.h"
#include "server/core/state_store.h"

namespace accel::server {

// None owned; all must outlive the server the routes are registered on.
struct DashboardDeps {
  JobRegistry* registry = nullptr;
  EventLog* events = nullptr;
  StateStore* store = nullptr;
  JobManager* manager = nullptr;
  std::string version;
};

// Registers the GET routes above on `routes`, and a fallback that answers any other path under
// /api/v1/ with a JSON 404. Handlers are thread-safe (the server runs several at once).
void RegisterDashboardRoutes(HttpRoutes& routes, const DashboardDeps& deps);

}  // namespace accel::server
