#include "server/http/dashboard.h"

#include <exception>
#include <string_view>

#include "absl/status/status.h"
#include "server/http/dashboard_api.h"
#include "server/http/web_assets.h"

namespace accel::server {
namespace {

const WebAsset* FindWebAsset(std::string_view path) {
  for (size_t i = 0; i < kNumWebAssets; ++i) {
    if (kWebAssets[i].path == path) return &kWebAssets[i];
  }
  return nullptr;
}

// Wraps a handler so that no exception (bad_alloc, json) leaves it for the server's thread.
template <typename F>
HttpRoutes::Handler Guarded(F handler) {
  return [handler](const HttpRequest& req, const std::vector<std::string>& captures) {
    try {
      return handler(req, captures);
    } catch (const std::exception& e) {
      return ErrorReply(absl::InternalError(e.what()));
    }
  };
}

void ServeAsset(HttpRoutes& routes, const std::string& route, std::string_view asset_path) {
  const WebAsset* asset = FindWebAsset(asset_path);
  if (asset == nullptr) return;  // the build embeds all three; nothing to serve otherwise
  routes.Get(route, [asset](const HttpRequest&, const std::vector<std::string>&) {
    HttpResponse res;
    res.content_type = std::string(asset->content_type);
    res.body = std::string(asset->body);
    res.headers.emplace_back("Cache-Control", "no-cache");
    res.headers.emplace_back("X-Content-Type-Options", "nosniff");
    return res;
  });
}

}  // namespace

void RegisterDashboardRoutes(HttpRoutes& routes, const DashboardDeps& deps) {
  ServeAsset(routes, "/", "/index.html");
  ServeAsset(routes, "/index.html", "/index.html");
  ServeAsset(routes, "/dashboard.js", "/dashboard.js");
  ServeAsset(routes, "/dashboard.css", "/dashboard.css");

  using Captures = std::vector<std::string>;
  const DashboardDeps d = deps;
  routes.Get("/api/v1/jobs",
             Guarded([d](const HttpRequest&, const Captures&) { return JobsReply(d); }));
  routes.Get("/api/v1/jobs/*", Guarded([d](const HttpRequest&, const Captures& id) {
               return JobReply(d, id[0]);
             }));
  routes.Get("/api/v1/jobs/*/events", Guarded([d](const HttpRequest& req, const Captures& id) {
               return JobEventsReply(d, id[0], req.Param("after"), req.Param("limit"));
             }));
  routes.Get("/api/v1/jobs/*/checkpoints", Guarded([d](const HttpRequest&, const Captures& id) {
               return CheckpointsReply(d, id[0]);
             }));
  routes.Get("/api/v1/cluster",
             Guarded([d](const HttpRequest&, const Captures&) { return ClusterReply(d); }));
  // Only what no route above matched lands here, whatever the method.
  routes.Fallback("/api/v1/", Guarded([](const HttpRequest& req, const Captures&) {
                    return ErrorReply(absl::NotFoundError("no such API route: " + req.path));
                  }));
}

}  // namespace accel::server
