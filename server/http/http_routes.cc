#include "server/http/http_routes.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace accel::server {
namespace {

// "/a/b/" → {"a", "b", ""}: a trailing slash is a segment of its own, so "/api/v1/jobs/"
// matches neither "/api/v1/jobs" nor "/api/v1/jobs/*".
std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out = absl::StrSplit(path, '/');
  if (!out.empty() && out.front().empty()) out.erase(out.begin());
  return out;
}

bool Match(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
           std::vector<std::string>* captures) {
  if (pattern.size() != path.size()) return false;
  captures->clear();
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == "*") {
      if (path[i].empty()) return false;
      captures->push_back(path[i]);
    } else if (pattern[i] != path[i]) {
      return false;
    }
  }
  return true;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 303: return "See Other";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
  }
}

}  // namespace

HttpResponse TextResponse(int status, std::string body) {
  if (body.empty() || body.back() != '\n') body += '\n';
  HttpResponse res;
  res.status = status;
  res.body = std::move(body);
  return res;
}

std::string SerializeResponse(const HttpResponse& response, bool head_only, bool close,
                              int minor_version) {
  std::string out = absl::StrCat("HTTP/1.1 ", response.status, " ", ReasonPhrase(response.status),
                                 "\r\nContent-Type: ", response.content_type,
                                 "\r\nContent-Length: ", response.body.size(), "\r\n");
  if (close) {
    absl::StrAppend(&out, "Connection: close\r\n");
  } else if (minor_version == 0) {
    absl::StrAppend(&out, "Connection: keep-alive\r\n");
  }
  for (const auto& [name, value] : response.headers) absl::StrAppend(&out, name, ": ", value, "\r\n");
  absl::StrAppend(&out, "\r\n");
  if (!head_only) absl::StrAppend(&out, response.body);
  return out;
}

void HttpRoutes::Get(const std::string& pattern, Handler handler) {
  routes_.push_back(Route{Segments(pattern), std::move(handler)});
}

void HttpRoutes::Fallback(const std::string& prefix, Handler handler) {
  fallbacks_.emplace_back(prefix, std::move(handler));
}

HttpResponse HttpRoutes::Serve(const HttpRequest& request) const {
  const std::vector<std::string> path = Segments(request.path);
  std::vector<std::string> captures;
  for (const Route& route : routes_) {
    if (!Match(route.segments, path, &captures)) continue;
    if (request.method != "GET" && request.method != "HEAD") {
      HttpResponse r = TextResponse(
          405, absl::StrCat("405 Method Not Allowed: ", request.path, " answers GET and HEAD"));
      r.headers.emplace_back("Allow", "GET, HEAD");
      return r;
    }
    return route.handler(request, captures);
  }
  for (const auto& [prefix, handler] : fallbacks_) {
    if (absl::StartsWith(request.path, prefix)) return handler(request, {});
  }
  return TextResponse(404, "404 Not Found");
}

}  // namespace accel::server
