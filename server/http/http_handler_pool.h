// The handler threads of acceld's HTTP front (server/http/http_front.h): requests the event loop
// hands over run here, several at once, and their answers queue up for the loop to write. The
// pool never touches a socket, so a slow handler (a SQLite read, a large page) holds a thread,
// never the loop.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/http/http_request.h"
#include "server/http/http_routes.h"

namespace accel::server {

class HttpHandlerPool {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  using Answer = std::pair<uint64_t, HttpResponse>;  // the id Submit was given, the answer

  // Starts `threads` threads (at least one). `answered` runs on a pool thread after each answer
  // is queued (the loop's wake-up); an exception from `handler` becomes a 500.
  HttpHandlerPool(int threads, Handler handler, std::function<void()> answered);
  ~HttpHandlerPool();
  HttpHandlerPool(const HttpHandlerPool&) = delete;
  HttpHandlerPool& operator=(const HttpHandlerPool&) = delete;

  void Submit(uint64_t id, HttpRequest request);
  std::deque<Answer> TakeAnswers();
  // Lets the handlers running finish, drops the requests not started, joins. Idempotent.
  void Stop();

 private:
  void Work();

  const Handler handler_;
  const std::function<void()> answered_;
  std::vector<std::thread> threads_;
  absl::Mutex mu_;
  std::deque<std::pair<uint64_t, HttpRequest>> requests_ ABSL_GUARDED_BY(mu_);
  std::deque<Answer> answers_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace accel::server
