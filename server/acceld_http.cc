// Acceld's HTTP side: the telemetry that /metrics renders, and the server that serves it with
// the dashboard. Only with --http-listen; without it acceld follows no telemetry.
#include "engine/base/status_macros.h"
#include "server/acceld.h"
#include "server/http/dashboard.h"
#include "server/http/metrics_page.h"

namespace accel::server {

absl::Status Acceld::FollowTelemetry() {
  if (options_.http_listen.empty()) return absl::OkStatus();
  telemetry_ = std::make_unique<JobTelemetry>();
  JobTelemetry* telemetry = telemetry_.get();
  // Observe first, then replay: nothing reports before the manager starts, so the replay and
  // the live stream cannot overlap.
  events_->SetObserver([telemetry](const std::vector<Event>& batch) { telemetry->Observe(batch); });
  constexpr int64_t kBatch = 1000;
  for (const JobRecord& job : registry_->List()) {
    if (IsTerminal(job.state)) continue;
    for (int64_t after = 0;;) {
      ACCEL_ASSIGN_OR_RETURN(std::vector<Event> events, events_->Read(job.id, after, kBatch));
      if (events.empty()) break;
      telemetry->Observe(events);
      after = events.back().seq;
    }
  }
  return absl::OkStatus();
}

absl::Status Acceld::StartHttp() {
  if (options_.http_listen.empty()) return absl::OkStatus();
  MetricsSources sources;
  sources.registry = registry_.get();
  JobManager* manager = manager_.get();
  sources.cluster = [manager] { return manager->Cluster(); };
  sources.events = events_.get();
  sources.telemetry = telemetry_.get();
  sources.rpc = &rpc_metrics_;
  sources.version = kAcceldVersion;
  HttpOptions http;
  http.listen = options_.http_listen;
  http.token = token_;
  DashboardDeps dashboard;
  dashboard.registry = registry_.get();
  dashboard.events = events_.get();
  dashboard.store = store_.get();
  dashboard.manager = manager_.get();
  dashboard.version = kAcceldVersion;
  ACCEL_ASSIGN_OR_RETURN(http_, HttpServer::Start(http, [&](HttpRoutes& routes) {
    routes.Get("/metrics", [sources](const HttpRequest&, const std::vector<std::string>&) {
      HttpResponse res;
      res.content_type = "text/plain; version=0.0.4; charset=utf-8";
      res.body = RenderMetrics(sources);
      return res;
    });
    RegisterDashboardRoutes(routes, dashboard);
  }));
  return absl::OkStatus();
}

}  // namespace accel::server
