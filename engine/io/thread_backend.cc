// The fallback backend: a pool of threads doing positional pread/pwrite, for hosts where
// io_uring is unavailable (shared/reference/zero_infinity.md §5.2). With O_DIRECT each call
// still bypasses the page cache; concurrency comes from the number of threads.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <vector>

#include "engine/io/io_backend.h"

namespace accel::io {
namespace {

constexpr int kMaxThreads = 64;

class ThreadBackend : public IoBackendImpl {
 public:
  ThreadBackend(IoQueue* queue, int threads) : queue_(queue) {
    workers_.reserve(threads);
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Run(); });
  }
  ~ThreadBackend() override { Join(); }

  std::string_view name() const override { return "threads"; }

  void Join() override {
    for (std::thread& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Run() {
    std::vector<IoPiece> pieces;
    while (true) {
      pieces.clear();
      if (!queue_->Take(1, /*block=*/true, &pieces)) return;
      for (const IoPiece& p : pieces) {
        const int fd = p.file->fd();
        const auto n = static_cast<size_t>(p.bytes);
        const ssize_t r = p.write ? pwrite(fd, p.buf, n, p.offset) : pread(fd, p.buf, n, p.offset);
        queue_->Complete(p, r < 0 ? -static_cast<int64_t>(errno) : static_cast<int64_t>(r));
      }
    }
  }

  IoQueue* queue_;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<IoBackendImpl> StartThreadBackend(IoQueue* queue, const AioOptions& options) {
  return std::make_unique<ThreadBackend>(queue, std::clamp(options.queue_depth, 1, kMaxThreads));
}

}  // namespace accel::io
