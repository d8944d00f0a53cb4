// The dashboard's JSON API as plain functions of their inputs (server/http/dashboard.h lists the
// routes), so tests and the HTTP adapter (dashboard.cc) share one implementation and no
// handler touches a socket. Answers are application/json with `Cache-Control: no-store`.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "server/http/dashboard.h"
#include "server/http/http_routes.h"

namespace accel::server {

// {"error":{"code":"NOT_FOUND","message":...}} with the HTTP status of the code (400, 404, 500, ...).
HttpResponse ErrorReply(const absl::Status& status);

HttpResponse JobsReply(const DashboardDeps& d);
HttpResponse JobReply(const DashboardDeps& d, const std::string& job_id);
// `after` and `limit` as the query gave them ("" when absent): after defaults to 0, limit to
// 1000, capped at 10000; anything but a number (limit: a positive one) is a 400.
HttpResponse JobEventsReply(const DashboardDeps& d, const std::string& job_id,
                         const std::string& after, const std::string& limit);
HttpResponse CheckpointsReply(const DashboardDeps& d, const std::string& job_id);
HttpResponse ClusterReply(const DashboardDeps& d);

}  // namespace accel::server
