// The dashboard's JSON API as plain functions of their inputs (server/dashboard.h lists the
// routes), so tests and the HTTP adapter (dashboard.cc) share one implementation and no
// handler touches httplib.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "server/dashboard.h"

namespace accel::server {

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// {"error":{"code":"NOT_FOUND","message":...}} with the HTTP status of the code (400, 404, 500, ...).
HttpReply ErrorReply(const absl::Status& status);

HttpReply JobsReply(const DashboardDeps& d);
HttpReply JobReply(const DashboardDeps& d, const std::string& job_id);
// `after` and `limit` as the query gave them ("" when absent): after defaults to 0, limit to
// 1000, capped at 10000; anything but a number (limit: a positive one) is a 400.
HttpReply JobEventsReply(const DashboardDeps& d, const std::string& job_id,
                         const std::string& after, const std::string& limit);
HttpReply CheckpointsReply(const DashboardDeps& d, const std::string& job_id);
HttpReply ClusterReply(const DashboardDeps& d);

}  // namespace accel::server
