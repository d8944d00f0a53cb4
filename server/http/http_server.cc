#include "server/http/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "server/core/same_secret.h"

namespace accel::server {
namespace {

constexpr char kCookie[] = "accel_token";
constexpr char kHowToAuthenticate[] =
    "401 Unauthorized: send `Authorization: Bearer <token>` (acceld's client token file), or "
    "open /?token=<token> once in a browser\n";

HttpResponse Unauthorized() {
  HttpResponse res = TextResponse(401, kHowToAuthenticate);
  res.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"acceld\"");
  return res;
}

// Answers on the event loop what needs no handler thread: /healthz, and every request without
// the token (401, or the ?token= login's redirect). nullopt: authenticated, for the routes.
std::optional<HttpResponse> Authenticate(const std::string& token, const HttpRequest& req) {
  if (req.path == "/healthz") {
    if (req.method == "GET" || req.method == "HEAD") return TextResponse(200, "ok");
    HttpResponse res = TextResponse(405, "405 Method Not Allowed: /healthz answers GET and HEAD");
    res.headers.emplace_back("Allow", "GET, HEAD");
    return res;
  }
  if (req.HasParam("token")) {
    if (!SameSecret(req.Param("token"), token)) return TextResponse(401, kHowToAuthenticate);
    // The path only (as sent: plain ASCII): the token leaves the address bar (and the
    // browser's history of it).
    HttpResponse res;
    res.status = 303;
    res.headers.emplace_back(
        "Set-Cookie", absl::StrCat(kCookie, "=", token, "; Path=/; HttpOnly; SameSite=Strict"));
    res.headers.emplace_back("Location", req.target.substr(0, req.target.find('?')));
    return res;
  }
  const std::string presented = PresentedToken(req.Header("Authorization"), req.Header("Cookie"));
  if (!presented.empty() && SameSecret(presented, token)) return std::nullopt;
  return Unauthorized();
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

absl::StatusOr<HttpListener> ListenHttp(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http-listen: expected host:port (e.g. 127.0.0.1:9090), got \"", listen, "\""));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "127.0.0.1";
  const absl::Status unavailable = absl::UnavailableError(absl::StrCat(
      "--http-listen: cannot listen on ", listen, " (port in use, or not this machine's address)"));

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return unavailable;
  }
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR (restart while old connections linger) but never SO_REUSEPORT: a second
    // server on a taken port must fail to bind.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return unavailable;
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                           : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  return HttpListener{
      .fd = fd,
      .port = port,
      .address = absl::StrCat(host.find(':') != std::string::npos ? "[" + host + "]" : host, ":",
                              port)};
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const HttpOptions& options, const std::function<void(HttpRoutes&)>& routes,
    const HttpLimits& limits) {
  if (options.token.empty()) return absl::InvalidArgumentError("--http-listen: no client token");
  std::unique_ptr<HttpServer> s(new HttpServer());
  if (routes) routes(s->routes_);
  ACCEL_ASSIGN_OR_RETURN(HttpListener listener, ListenHttp(options.listen));
  s->port_ = listener.port;
  s->address_ = listener.address;
  const HttpRoutes* served = &s->routes_;
  ACCEL_ASSIGN_OR_RETURN(
      s->front_,
      HttpFront::Start(
          listener.fd, limits,
          [token = options.token](const HttpRequest& req) { return Authenticate(token, req); },
          [served](const HttpRequest& req) { return served->Serve(req); }));
  ACCEL_LOG(info, "acceld: HTTP (metrics, dashboard) on http://{}/", s->address_);
  return s;
}

void HttpServer::Stop() {
  if (front_) front_->Stop();
}

HttpServer::~HttpServer() { Stop(); }

}  // namespace accel::server
