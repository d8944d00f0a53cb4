// HttpFront: the connection side of acceld's HTTP server — accepting, reading requests, writing
// answers — built so that a few hostile peers cannot stall it or grow acceld
// (docs/observability.md "Limits").
//
// Why not cpp-httplib's server (Debian's 0.11.4, which acceld used before): it gives each
// connection a thread of a fixed pool (8 on a small machine) that blocks in read(), with a
// per-read timeout that a client dripping one byte at a time resets forever, no limit on
// connections per peer or in all, and (for GET routes) a body read whatever its length. Eight
// idle sockets then take every thread and /healthz stops answering. None of that is a setting.
//
// The design: one event-loop thread owns every socket (epoll, non-blocking). It accepts while
// the peer (its IP address) holds fewer than max_connections_per_peer connections and all peers
// fewer than max_connections — when the total is full, the oldest connection still waiting for
// its request from the peer holding the most is closed to make room, so one crowd cannot lock
// other peers out. It reads each request head into a buffer of at most max_head_bytes, under one
// deadline (request_deadline) for the whole head and body, parses it with our own parser
// (server/http/http_request.h), refuses a body over max_body_bytes (413) from the head alone, reads
// and discards a smaller one, and answers protocol errors (400, 408, 411, 413, 414, 431, 505)
// itself. A parsed request goes first to `quick` on the loop thread (cheap answers: /healthz,
// 401s), else to one of handler_threads threads running `handler` (server/http/http_handler_pool.h);
// answers are written by the loop under write_deadline. Memory is bounded by the connection cap
// times the head cap plus the answers being written; no byte of a refused body is kept.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "server/http/http_request.h"
#include "server/http/http_routes.h"

namespace accel::server {

class HttpFront {
 public:
  // Runs on the loop thread: must not block. nullopt hands the request to `handler`.
  using Quick = std::function<std::optional<HttpResponse>(const HttpRequest&)>;
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  // Serves on `listen_fd` (bound and listening; the front owns it from here on).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpFront>> Start(int listen_fd,
                                                                        const HttpLimits& limits,
                                                                        Quick quick,
                                                                        Handler handler);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Closes the listening socket and every connection, and waits for the threads (a handler
  // running finishes first). Idempotent.
  void Stop();

 private:
  class Loop;
  explicit HttpFront(std::unique_ptr<Loop> loop);
  std::unique_ptr<Loop> loop_;
};

}  // namespace accel::server
