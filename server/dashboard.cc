#include "server/dashboard.h"

#include <exception>
#include <string_view>

#include "absl/status/status.h"
#include "server/dashboard_api.h"
#include "server/web_assets.h"

namespace accel::server {
namespace {

const WebAsset* FindWebAsset(std::string_view path) {
  for (size_t i = 0; i < kNumWebAssets; ++i) {
    if (kWebAssets[i].path == path) return &kWebAssets[i];
  }
  return nullptr;
}

void Send(const HttpReply& reply, httplib::Response& res) {
  res.status = reply.status;
  res.set_content(reply.body, reply.content_type.c_str());
  res.set_header("Cache-Control", "no-store");
}

// Wraps a handler so that no exception (bad_alloc, json) leaves it for httplib's thread.
template <typename F>
httplib::Server::Handler Guarded(F handler) {
  return [handler](const httplib::Request& req, httplib::Response& res) {
    try {
      Send(handler(req), res);
    } catch (const std::exception& e) {
      Send(ErrorReply(absl::InternalError(e.what())), res);
    }
  };
}

void ServeAsset(httplib::Server& server, const std::string& route, std::string_view asset_path) {
  const WebAsset* asset = FindWebAsset(asset_path);
  if (asset == nullptr) return;  // the build embeds all three; nothing to serve otherwise
  server.Get(route, [asset](const httplib::Request&, httplib::Response& res) {
    res.set_content(asset->body.data(), asset->body.size(), std::string(asset->content_type));
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Content-Type-Options", "nosniff");
  });
}

}  // namespace

void RegisterDashboardRoutes(httplib::Server& server, const DashboardDeps& deps) {
  ServeAsset(server, "/", "/index.html");
  ServeAsset(server, "/index.html", "/index.html");
  ServeAsset(server, "/dashboard.js", "/dashboard.js");
  ServeAsset(server, "/dashboard.css", "/dashboard.css");

  const DashboardDeps d = deps;
  server.Get("/api/v1/jobs", Guarded([d](const httplib::Request&) { return JobsReply(d); }));
  server.Get(R"(/api/v1/jobs/([^/]+))", Guarded([d](const httplib::Request& req) {
               return JobReply(d, req.matches[1]);
             }));
  server.Get(R"(/api/v1/jobs/([^/]+)/events)", Guarded([d](const httplib::Request& req) {
               return JobEventsReply(d, req.matches[1], req.get_param_value("after"),
                                     req.get_param_value("limit"));
             }));
  server.Get(R"(/api/v1/jobs/([^/]+)/checkpoints)", Guarded([d](const httplib::Request& req) {
               return CheckpointsReply(d, req.matches[1]);
             }));
  server.Get("/api/v1/cluster", Guarded([d](const httplib::Request&) { return ClusterReply(d); }));
  // Registered last: httplib tries routes in order, so only what nothing above took lands here.
  server.Get(R"(/api/v1/.*)", Guarded([](const httplib::Request& req) {
               return ErrorReply(absl::NotFoundError("no such API route: " + req.path));
             }));
}

}  // namespace accel::server
