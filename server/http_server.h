// HttpServer: acceld's HTTP side (--http-listen): cpp-httplib (Debian) serving on its own
// threads, with the client token required on every path but /healthz.
//
// Auth (docs/observability.md): `Authorization: Bearer <token>` (scrapers, curl), or the
// `accel_token` cookie a browser gets by opening any page once with `?token=<token>` (acceld
// then sets the cookie, HttpOnly and SameSite=Strict, and redirects to the same path without the
// token, so it leaves the address bar). Anything else is 401 with a line saying how to
// authenticate.
// The listening socket is bound without SO_REUSEPORT, so a port another process holds fails at
// Start instead of splitting requests between two servers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace accel::server {

struct HttpOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  std::string token;                   // the client token; required
};

class HttpServer {
 public:
  // Binds, lets `routes` register its handlers (GET /healthz is already there), then serves.
  // InvalidArgument naming --http-listen for a malformed address or an empty token;
  // Unavailable when the address cannot be bound (taken port, foreign address).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const HttpOptions& options, const std::function<void(httplib::Server&)>& routes);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  const std::string& address() const { return address_; }  // "host:port" as bound
  // Stops accepting and waits for the serving thread. Idempotent.
  void Stop();

 private:
  HttpServer() = default;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::string address_;
};

// The token a request presents: the Bearer header's, else the accel_token cookie's; "" if none.
std::string PresentedToken(const std::string& authorization, const std::string& cookie);

}  // namespace accel::server
