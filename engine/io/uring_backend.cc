// The io_uring backend. One worker thread owns the ring (liburing rings are not safe for
// concurrent submitters), so no lock guards it. Submitters reach the worker through an
// eventfd that the ring itself polls: the worker blocks in exactly one place,
// io_uring_wait_cqe, and wakes for either an I/O completion or new work.
#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/io_backend.h"

namespace accel::io {
namespace {

constexpr uint64_t kWakeTag = 0;  // user_data of the eventfd poll; pieces use slot + 1

class UringBackend : public IoBackendImpl {
 public:
  UringBackend(IoQueue* queue, const AioOptions& options)
      : queue_(queue), options_(options), slots_(options.queue_depth), free_(options.queue_depth) {
    for (int i = 0; i < options.queue_depth; ++i) free_[i] = options.queue_depth - 1 - i;
  }
  ~UringBackend() override {
    Join();
    if (ring_ready_) io_uring_queue_exit(&ring_);
    if (event_fd_ >= 0) close(event_fd_);
  }

  std::string_view name() const override { return "io_uring"; }

  absl::Status Init() {
    // One extra entry for the eventfd poll that is always armed.
    const int rc = io_uring_queue_init(static_cast<unsigned>(options_.queue_depth + 1), &ring_, 0);
    if (rc < 0) {
      return absl::UnavailableError(absl::StrCat(
          "io_uring_queue_init failed: ", std::strerror(-rc),
          -rc == EPERM ? " (io_uring is blocked by seccomp, kernel.io_uring_disabled or an LSM)"
          : -rc == ENOSYS ? " (the kernel has no io_uring)"
                          : ""));
    }
    ring_ready_ = true;
    io_uring_probe* probe = io_uring_get_probe_ring(&ring_);
    if (probe == nullptr) {
      return absl::UnavailableError("io_uring has no opcode probe (kernel older than 5.6)");
    }
    const bool ok = io_uring_opcode_supported(probe, IORING_OP_READ) &&
                    io_uring_opcode_supported(probe, IORING_OP_WRITE) &&
                    io_uring_opcode_supported(probe, IORING_OP_POLL_ADD);
    io_uring_free_probe(probe);
    if (!ok) return absl::UnavailableError("io_uring lacks IORING_OP_READ/WRITE/POLL_ADD");
    event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (event_fd_ < 0) {
      return absl::UnavailableError(absl::StrCat("eventfd failed: ", std::strerror(errno)));
    }
    ArmWake();
    if (const int s = io_uring_submit(&ring_); s < 0) {
      return absl::UnavailableError(absl::StrCat("io_uring_submit failed: ", std::strerror(-s)));
    }
    prepared_.clear();
    queue_->SetWake([fd = event_fd_] {
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t w = write(fd, &one, sizeof(one));
    });
    worker_ = std::thread([this] { Run(); });
    return absl::OkStatus();
  }

  void Join() override {
    if (worker_.joinable()) worker_.join();
  }

 private:
  void ArmWake() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_poll_add(sqe, event_fd_, POLLIN);
    io_uring_sqe_set_data64(sqe, kWakeTag);
    prepared_.push_back(-1);
  }

  // Submits every prepared SQE, retrying while the kernel is busy. SQEs are consumed in
  // order, so the first `s` entries of prepared_ are the ones submitted. On a hard failure
  // the rest can never be submitted: their pieces are reported failed here, the queue is shut
  // down (so no request can wait forever) and this ring never submits again.
  void SubmitPrepared() {
    while (!prepared_.empty() && submit_error_ == 0) {
      const int s = io_uring_submit(&ring_);
      if (s == -EINTR || s == -EAGAIN || s == -EBUSY) {
        std::this_thread::yield();
        continue;
      }
      if (s < 0) {
        submit_error_ = -s;
        break;
      }
      prepared_.erase(prepared_.begin(), prepared_.begin() + std::min<size_t>(s, prepared_.size()));
    }
    if (submit_error_ == 0) return;
    for (int slot : prepared_) {
      if (slot < 0) continue;
      const IoPiece piece = slots_[slot];
      free_.push_back(slot);
      queue_->Complete(piece, -submit_error_);
    }
    prepared_.clear();
    queue_->Shutdown(absl::InternalError(
        absl::StrCat("io_uring_submit failed: ", std::strerror(submit_error_))));
  }

  void Run() {
    std::vector<IoPiece> pieces;
    bool open = true;
    while (true) {
      pieces.clear();
      if (open) open = queue_->Take(static_cast<int>(free_.size()), /*block=*/false, &pieces);
      for (const IoPiece& p : pieces) {
        const int slot = free_.back();
        free_.pop_back();
        slots_[slot] = p;
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // never null: entries > queue_depth
        if (p.write) {
          io_uring_prep_write(sqe, p.file->fd(), p.buf, static_cast<unsigned>(p.bytes), p.offset);
        } else {
          io_uring_prep_read(sqe, p.file->fd(), p.buf, static_cast<unsigned>(p.bytes), p.offset);
        }
        io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(slot) + 1);
        prepared_.push_back(slot);
        if (options_.single_submit) SubmitPrepared();
      }
      SubmitPrepared();
      if (submit_error_ != 0) open = false;
      const int busy = options_.queue_depth - static_cast<int>(free_.size());
      if (!open && busy == 0) return;
      io_uring_cqe* cqe = nullptr;
      const int rc = io_uring_wait_cqe(&ring_, &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0) return;  // a broken ring: nothing more can be reaped
      unsigned head;
      unsigned seen = 0;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        ++seen;
        const uint64_t tag = io_uring_cqe_get_data64(cqe);
        if (tag == kWakeTag) {
          uint64_t value;
          [[maybe_unused]] ssize_t r = read(event_fd_, &value, sizeof(value));
          if (open && submit_error_ == 0) ArmWake();
          continue;
        }
        const int slot = static_cast<int>(tag - 1);
        const IoPiece piece = slots_[slot];
        free_.push_back(slot);
        queue_->Complete(piece, cqe->res);
      }
      io_uring_cq_advance(&ring_, seen);
    }
  }

  IoQueue* queue_;
  const AioOptions options_;
  io_uring ring_{};
  bool ring_ready_ = false;
  int event_fd_ = -1;
  std::vector<IoPiece> slots_;
  std::vector<int> free_;
  std::vector<int> prepared_;  // slots of SQEs not yet submitted; -1 is the wake poll
  int submit_error_ = 0;
  std::thread worker_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<IoBackendImpl>> StartUringBackend(IoQueue* queue,
                                                                 const AioOptions& options) {
  auto backend = std::make_unique<UringBackend>(queue, options);
  absl::Status s = backend->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<IoBackendImpl>(std::move(backend));
}

}  // namespace accel::io
