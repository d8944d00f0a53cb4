// HttpServer: acceld's HTTP side (--http-listen): our own small server (server/http/http_front.h:
// one event loop with connection caps and request deadlines, server/http/http_request.h's parser,
// server/http/http_routes.h's routes), with the client token required on every path but /healthz.
//
// Auth (docs/observability.md): `Authorization: Bearer <token>` (scrapers, curl), or the
// `accel_token` cookie a browser gets by opening any page once with `?token=<token>` (acceld
// then sets the cookie, HttpOnly and SameSite=Strict, and redirects to the same path without the
// token, so it leaves the address bar). Anything else is 401 with a line saying how to
// authenticate. /healthz and the 401s are answered on the event loop itself, so they come back
// while every handler thread is busy; the rest runs on the handler threads.
// The listening socket is bound with SO_REUSEADDR and without SO_REUSEPORT, so a port another
// process holds fails at Start instead of splitting requests between two servers.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/http/http_front.h"
#include "server/http/http_request.h"
#include "server/http/http_routes.h"

namespace accel::server {

struct HttpOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  std::string token;                   // the client token; required
};

// A listening socket bound to `listen` ("host:port", "[v6]:port"; port 0 picks a free one).
struct HttpListener {
  int fd = -1;
  int port = 0;
  std::string address;  // "host:port" as bound
};
// InvalidArgument naming --http-listen for a malformed address; Unavailable when it cannot be
// bound (taken port, foreign address).
[[nodiscard]] absl::StatusOr<HttpListener> ListenHttp(const std::string& listen);

class HttpServer {
 public:
  // Binds, lets `routes` register its handlers (GET /healthz is answered before them), then
  // serves under `limits` (docs/observability.md "Limits"). InvalidArgument naming
  // --http-listen for a malformed address or an empty token; Unavailable when the address
  // cannot be bound (ListenHttp).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const HttpOptions& options, const std::function<void(HttpRoutes&)>& routes,
      const HttpLimits& limits = HttpLimits());
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  const std::string& address() const { return address_; }  // "host:port" as bound
  // Stops accepting, closes every connection and waits for the server's threads. Idempotent.
  void Stop();

 private:
  HttpServer() = default;

  HttpRoutes routes_;  // fixed once serving starts
  std::unique_ptr<HttpFront> front_;
  int port_ = 0;
  std::string address_;
};

// The token a request presents: the Bearer header's, else the accel_token cookie's; "" if none.
std::string PresentedToken(const std::string& authorization, const std::string& cookie);

}  // namespace accel::server
