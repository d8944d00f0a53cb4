// acceld's own HTTP/1.1 request parser (docs/observability.md "Limits"): the request line, the
// header fields and Content-Length, nothing more. It reads bytes a stranger sent, so it is
// strict where leniency breeds ambiguity (a bare CR, folded header lines, two Content-Lengths,
// Transfer-Encoding next to Content-Length) and checks every limit before anything is stored.
// Pure functions of their input: server/http/http_front.cc feeds them the bytes of a connection, and
// fuzz/http_request_fuzz.cc feeds them anything.
//
// Refusals carry the HTTP status to answer with:
//   400 malformed request line or header, bad percent-encoding, a path that is not UTF-8
//   411 Transfer-Encoding (chunked bodies): no route takes a body, so none is read without a length
//   413 Content-Length over HttpLimits::max_body_bytes (before a byte of the body is read)
//   414 a request line longer than max_head_bytes; 431 a head longer than max_head_bytes
//   505 an HTTP version other than 1.0 and 1.1
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace accel::server {

// What acceld's HTTP side accepts from one peer; server/http/http_front.h enforces the connection
// and time limits, ParseRequestHead the byte limits.
struct HttpLimits {
  size_t max_head_bytes = 16 << 10;  // request line + header fields + the blank line
  size_t max_body_bytes = 1 << 20;   // docs/observability.md promises 1 MiB
  // From the moment a connection waits for a request (accepted, or its previous answer sent)
  // until its head and body are in: a total, so a client dripping a byte a second gains nothing.
  absl::Duration request_deadline = absl::Seconds(10);
  absl::Duration write_deadline = absl::Seconds(10);  // to send one answer
  int max_connections = 256;          // open at once, all peers together
  int max_connections_per_peer = 32;  // open at once from one IP address
  int handler_threads = 4;            // run the routes (SQLite reads, rendering)
};

using HttpFields = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // as sent (methods are case-sensitive): "GET"
  std::string target;  // the request-target as sent: "/api/v1/jobs?x=1"
  std::string path;    // the target's path, percent-decoded: valid UTF-8 without NUL
  HttpFields query;    // the target's query, decoded ('+' is a space), in order
  HttpFields headers;  // field names as sent, values without surrounding whitespace
  int minor_version = 1;      // HTTP/1.<minor>
  int64_t content_length = 0;
  bool keep_alive = true;     // HTTP/1.1 unless "Connection: close"; 1.0 only with keep-alive
  std::string peer;           // the client's IP address (set by the server, not parsed)

  // The first field named `name` (case-insensitive), "" when absent.
  std::string Header(absl::string_view name) const;
  bool HasParam(absl::string_view name) const;
  std::string Param(absl::string_view name) const;  // the first, "" when absent
};

// A refusal: the status to answer with and a one-line reason for the body.
struct HttpRefusal {
  int status = 400;
  std::string message;
};

// The length of the head at the start of `bytes`, through the empty line that ends it (CRLF
// CRLF, or bare LF LF); 0 while it has not ended. `*scanned` (start at 0) keeps how far the
// search got, so feeding a connection's buffer byte by byte stays linear.
size_t RequestHeadLength(absl::string_view bytes, size_t* scanned);

// For `bytes` that reached max_head_bytes without an end: 414 if the request line has not ended
// either, else 431.
HttpRefusal HeadTooLarge(absl::string_view bytes, const HttpLimits& limits);

// Parses one complete head (what RequestHeadLength measured). On a refusal returns false and
// fills *refusal; *request is then unspecified.
bool ParseRequestHead(absl::string_view head, const HttpLimits& limits, HttpRequest* request,
                      HttpRefusal* refusal);

// Percent-decodes `in` ('+' as a space when `plus_is_space`); false for a '%' not followed by
// two hex digits.
bool PercentDecode(absl::string_view in, bool plus_is_space, std::string* out);
bool IsValidUtf8(absl::string_view s);

}  // namespace accel::server
