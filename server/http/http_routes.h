// The routes of acceld's HTTP side: GET handlers by path pattern, and the answers for what no
// handler takes. A pattern is a path whose segments are literal or "*" (exactly one non-empty
// segment, handed to the handler as a capture): "/api/v1/jobs/*/events".
//   - a path no pattern matches: 404, or a prefix's fallback (the dashboard's JSON 404);
//   - a path some pattern matches, with a method other than GET or HEAD: 405 with
//     `Allow: GET, HEAD` (no route changes anything);
//   - HEAD runs the GET handler; the server sends its head without the body.
// Handlers run on the server's handler threads, several at once.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "server/http/http_request.h"

namespace accel::server {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  HttpFields headers;  // beyond Content-Type, Content-Length and Connection
};

// A text/plain answer with `body` (a newline appended when missing).
HttpResponse TextResponse(int status, std::string body);

// The bytes of `response` on the wire: status line, Content-Type, Content-Length, Connection
// (close, or keep-alive for an HTTP/1.0 client that asked for it), the other fields, the body
// (none for `head_only`, the answer to HEAD, whose Content-Length still counts it).
std::string SerializeResponse(const HttpResponse& response, bool head_only, bool close,
                              int minor_version);

class HttpRoutes {
 public:
  using Handler =
      std::function<HttpResponse(const HttpRequest& request, const std::vector<std::string>& captures)>;

  // The first pattern added that matches wins.
  void Get(const std::string& pattern, Handler handler);
  // What answers a path under `prefix` that no pattern matched, whatever the method.
  void Fallback(const std::string& prefix, Handler handler);

  // The answer to `request` (its path already decoded by the parser).
  HttpResponse Serve(const HttpRequest& request) const;

 private:
  struct Route {
    std::vector<std::string> segments;
    Handler handler;
  };
  std::vector<Route> routes_;
  std::vector<std::pair<std::string, Handler>> fallbacks_;
};

}  // namespace accel::server
