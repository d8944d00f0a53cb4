// AsyncIo: asynchronous reads and writes of BlockFiles, the engine under NVMe offload.
//
//   ACCEL_ASSIGN_OR_RETURN(auto aio, io::AsyncIo::Create(options));
//   ACCEL_ASSIGN_OR_RETURN(io::IoTicket t, aio->SubmitWrite(file, 0, buf.data(), buf.size()));
//   ... compute ...
//   ACCEL_RETURN_IF_ERROR(aio->Wait(t, absl::Now() + absl::Seconds(60)));
//
// Backends: io_uring (liburing) when io_uring_queue_init succeeds and the kernel has
// IORING_OP_READ/WRITE; otherwise a pool of pread/pwrite threads (containers often forbid
// io_uring by seccomp: shared/reference/zero_infinity.md §5.2). The probe runs once, in
// Create; backend() names the result and fallback_reason() says why io_uring was not used.
//
// DeepSpeed's `aio` keys (AioOptions) mean here:
//   block_size     each request is cut into pieces of this many bytes (the last may be shorter);
//   queue_depth    at most this many pieces are in flight, over all requests;
//   single_submit  io_uring: one io_uring_submit per piece instead of one per batch
//                  (the thread backend issues pieces one by one anyway);
//   overlap_events true: keep queue_depth pieces in flight, issuing a new one as each
//                  completes; false: issue a batch of up to queue_depth pieces and wait for
//                  all of it before issuing the next batch (both backends).
// Requests are issued in submission order (pieces in order), completed in any order.
//
// Every completion's byte count is checked. A short transfer is retried for the remainder;
// a read that reaches the end of the file, a write that moves 0 bytes, or (for direct files)
// a short count that is not a multiple of the alignment is DataLoss naming the file, offset
// and bytes. An errno failure names file and offset (ResourceExhausted for ENOSPC/EDQUOT,
// Internal otherwise). A request's status is that of its failing piece with the lowest offset.
//
// Offsets, lengths and buffer addresses must keep the BlockFile's alignment
// (BlockFile::CheckTransfer): Submit* returns InvalidArgument naming the offset otherwise.
// The buffer and the BlockFile must stay alive, and a read's buffer untouched, until the
// request has been waited for.
//
// Thread-safety: all methods may be called from any thread; one submitting thread is the
// intended use. Each ticket is waited for once (Wait or WaitAll consume it).
// Destruction cancels pieces not yet issued (their requests fail with Cancelled) and waits
// for the in-flight ones, so buffers may be freed right after it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/io/block_file.h"

namespace accel::io {

enum class AioBackend { kAuto, kIoUring, kThreads };

struct AioOptions {
  int64_t block_size = 1 << 20;  // bytes; a positive multiple of 4096
  int queue_depth = 8;           // 1..1024
  bool single_submit = false;
  bool overlap_events = true;
  // kAuto: io_uring, else threads. kThreads forces the thread pool (tests, or where io_uring
  // misbehaves). kIoUring fails with Unavailable instead of falling back.
  AioBackend backend = AioBackend::kAuto;
  // Tests only: every piece waits this long before it is issued (to exercise deadlines).
  absl::Duration delay_for_testing = absl::ZeroDuration();
};

// InvalidArgument naming the key (aio.block_size, aio.queue_depth) when out of range.
[[nodiscard]] absl::Status ValidateAioOptions(const AioOptions& options);

using IoTicket = uint64_t;  // 0 is never a valid ticket

class IoQueue;
class IoBackendImpl;

class AsyncIo {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<AsyncIo>> Create(
      const AioOptions& options = {});
  ~AsyncIo();
  AsyncIo(const AsyncIo&) = delete;
  AsyncIo& operator=(const AsyncIo&) = delete;

  // Queue a transfer of `bytes` at `offset`; returns at once. bytes == 0 is a no-op request.
  [[nodiscard]] absl::StatusOr<IoTicket> SubmitRead(BlockFile& file, int64_t offset, void* buf,
                                                    int64_t bytes);
  [[nodiscard]] absl::StatusOr<IoTicket> SubmitWrite(BlockFile& file, int64_t offset,
                                                     const void* buf, int64_t bytes);

  // The request's status once it is complete (and forgets the ticket). DeadlineExceeded
  // naming file and offset if it is not complete by `deadline`; the ticket then stays valid.
  // InvalidArgument for an unknown or already-waited ticket.
  [[nodiscard]] absl::Status Wait(IoTicket ticket,
                                  absl::Time deadline = absl::InfiniteFuture());
  // Waits for every outstanding request; the first failure among them (all are consumed), or
  // DeadlineExceeded naming the first incomplete one (none are consumed).
  [[nodiscard]] absl::Status WaitAll(absl::Time deadline = absl::InfiniteFuture());

  // Submit + Wait, for callers that do not overlap. On DeadlineExceeded the transfer is still
  // in flight: keep the buffer alive and collect it with WaitAll.
  [[nodiscard]] absl::Status Read(BlockFile& file, int64_t offset, void* buf, int64_t bytes,
                                  absl::Time deadline = absl::InfiniteFuture());
  [[nodiscard]] absl::Status Write(BlockFile& file, int64_t offset, const void* buf,
                                   int64_t bytes, absl::Time deadline = absl::InfiniteFuture());

  // "io_uring" or "threads".
  std::string_view backend() const;
  // Empty when the backend is io_uring or was forced; otherwise why io_uring was not used.
  const std::string& fallback_reason() const { return fallback_reason_; }
  const AioOptions& options() const { return options_; }
  // Requests submitted and not yet waited for.
  int64_t outstanding() const;

 private:
  AsyncIo(const AioOptions& options);

  AioOptions options_;
  std::string fallback_reason_;
  std::unique_ptr<IoQueue> queue_;
  std::unique_ptr<IoBackendImpl> backend_;
};

}  // namespace accel::io
