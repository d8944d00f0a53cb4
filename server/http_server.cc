#include "server/http_server.h"

#include <sys/socket.h>

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/base/logging.h"
#include "httplib.h"
#include "server/same_secret.h"

namespace accel::server {
namespace {

constexpr char kCookie[] = "accel_token";
constexpr char kHowToAuthenticate[] =
    "401 Unauthorized: send `Authorization: Bearer <token>` (acceld's client token file), or "
    "open /?token=<token> once in a browser\n";

httplib::Server::HandlerResponse Authenticate(const std::string& token,
                                              const httplib::Request& req,
                                              httplib::Response& res) {
  if (req.path == "/healthz") return httplib::Server::HandlerResponse::Unhandled;
  if (req.has_param("token")) {
    if (!SameSecret(req.get_param_value("token"), token)) {
      res.status = 401;
      res.set_content(kHowToAuthenticate, "text/plain; charset=utf-8");
      return httplib::Server::HandlerResponse::Handled;
    }
    // The path only: the token leaves the address bar (and the browser's history of it).
    res.set_header("Set-Cookie", absl::StrCat(kCookie, "=", token,
                                              "; Path=/; HttpOnly; SameSite=Strict"));
    res.set_redirect(req.path, 303);
    return httplib::Server::HandlerResponse::Handled;
  }
  const std::string presented =
      PresentedToken(req.get_header_value("Authorization"), req.get_header_value("Cookie"));
  if (!presented.empty() && SameSecret(presented, token)) {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  res.status = 401;
  res.set_header("WWW-Authenticate", "Bearer realm=\"acceld\"");
  res.set_content(kHowToAuthenticate, "text/plain; charset=utf-8");
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

std::string PresentedToken(const std::string& authorization, const std::string& cookie) {
  if (absl::StartsWithIgnoreCase(authorization, "bearer ")) {
    return std::string(absl::StripAsciiWhitespace(authorization.substr(7)));
  }
  for (absl::string_view part : absl::StrSplit(cookie, ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, kCookie) && absl::ConsumePrefix(&part, "=")) {
      return std::string(part);
    }
  }
  return "";
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const HttpOptions& options, const std::function<void(httplib::Server&)>& routes) {
  if (options.token.empty()) return absl::InvalidArgumentError("--http-listen: no client token");
  const size_t colon = options.listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(options.listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http-listen: expected host:port (e.g. 127.0.0.1:9090), got \"", options.listen, "\""));
  }
  std::string host = options.listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "127.0.0.1";

  std::unique_ptr<HttpServer> s(new HttpServer());
  s->server_ = std::make_unique<httplib::Server>();
  httplib::Server& http = *s->server_;
  // SO_REUSEADDR (restart while old connections linger) but not httplib's default
  // SO_REUSEPORT: a second server on a taken port must fail to bind.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.set_read_timeout(10, 0);
  http.set_write_timeout(10, 0);
  http.set_payload_max_length(1 << 20);  // acceld's HTTP side takes no uploads
  const std::string token = options.token;
  http.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
    return Authenticate(token, req, res);
  });
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain; charset=utf-8");
  });
  if (routes) routes(http);

  if (port == 0) {
    port = http.bind_to_any_port(host);
  } else if (!http.bind_to_port(host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat("--http-listen: cannot listen on ", options.listen,
                                               " (port in use, or not this machine's address)"));
  }
  s->port_ = port;
  s->address_ = absl::StrCat(host.find(':') != std::string::npos ? "[" + host + "]" : host, ":",
                             port);
  s->thread_ = std::thread([&http] { http.listen_after_bind(); });
  ACCEL_LOG(info, "acceld: HTTP (metrics, dashboard) on http://{}/", s->address_);
  return s;
}

void HttpServer::Stop() {
  // stop() only acts on a running server: give a just-started thread its moment to begin.
  for (int i = 0; i < 200 && server_ && thread_.joinable() && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

HttpServer::~HttpServer() { Stop(); }

}  // namespace accel::server
