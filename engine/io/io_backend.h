// The two ways AsyncIo moves bytes (internal to engine/io). A backend pulls pieces from an
// IoQueue (which enforces queue_depth and overlap_events), performs them, and reports each
// result with IoQueue::Complete; it never interprets results itself.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "engine/io/async_io.h"
#include "engine/io/io_queue.h"

namespace accel::io {

class IoBackendImpl {
 public:
  virtual ~IoBackendImpl() = default;
  virtual std::string_view name() const = 0;
  // Returns once the worker threads have exited. Call after IoQueue::Shutdown; pieces already
  // issued are completed (and reported) first, so their buffers are free afterwards.
  virtual void Join() = 0;
};

// io_uring with one worker thread that owns the ring. Unavailable, with the reason, when the
// ring cannot be created (ENOSYS: no CONFIG_IO_URING; EPERM: seccomp, kernel.io_uring_disabled
// or an LSM) or lacks IORING_OP_READ/WRITE/POLL_ADD (kernels before 5.6).
[[nodiscard]] absl::StatusOr<std::unique_ptr<IoBackendImpl>> StartUringBackend(
    IoQueue* queue, const AioOptions& options);

// queue_depth threads (at most 64), each doing one blocking pread/pwrite at a time.
std::unique_ptr<IoBackendImpl> StartThreadBackend(IoQueue* queue, const AioOptions& options);

}  // namespace accel::io
