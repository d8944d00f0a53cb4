#include "server/http/http_handler_pool.h"

#include <algorithm>
#include <exception>

#include "absl/strings/str_cat.h"

namespace accel::server {

HttpHandlerPool::HttpHandlerPool(int threads, Handler handler, std::function<void()> answered)
    : handler_(std::move(handler)), answered_(std::move(answered)) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Work(); });
}

HttpHandlerPool::~HttpHandlerPool() { Stop(); }

void HttpHandlerPool::Submit(uint64_t id, HttpRequest request) {
  absl::MutexLock lock(&mu_);
  requests_.emplace_back(id, std::move(request));
}

std::deque<HttpHandlerPool::Answer> HttpHandlerPool::TakeAnswers() {
  std::deque<Answer> out;
  absl::MutexLock lock(&mu_);
  out.swap(answers_);
  return out;
}

void HttpHandlerPool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void HttpHandlerPool::Work() {
  for (;;) {
    std::pair<uint64_t, HttpRequest> job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](HttpHandlerPool* p) {
            return p->stopping_ || !p->requests_.empty();
          },
          this));
      if (stopping_) return;
      job = std::move(requests_.front());
      requests_.pop_front();
    }
    HttpResponse response;
    try {
      response = handler_(job.second);
    } catch (const std::exception& e) {
      response = TextResponse(500, absl::StrCat("500 Internal Server Error: ", e.what()));
    }
    {
      absl::MutexLock lock(&mu_);
      answers_.emplace_back(job.first, std::move(response));
    }
    answered_();
  }
}

}  // namespace accel::server
