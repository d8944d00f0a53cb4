#include "engine/io/async_io.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/io/aligned_buffer.h"
#include "engine/io/io_backend.h"
#include "engine/io/io_queue.h"

namespace accel::io {

namespace {
constexpr int kMaxQueueDepth = 1024;
// One piece must fit a single read/write call (Linux moves at most 0x7ffff000 bytes per call).
constexpr int64_t kMaxBlockSize = int64_t{1} << 30;
}  // namespace

absl::Status ValidateAioOptions(const AioOptions& options) {
  if (options.block_size <= 0 || options.block_size % static_cast<int64_t>(kPageAlignment) != 0 ||
      options.block_size > kMaxBlockSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "aio.block_size must be a positive multiple of ", kPageAlignment, " of at most ",
        kMaxBlockSize, " bytes, got ", options.block_size));
  }
  if (options.queue_depth < 1 || options.queue_depth > kMaxQueueDepth) {
    return absl::InvalidArgumentError(absl::StrCat("aio.queue_depth must be in [1, ",
                                                   kMaxQueueDepth, "], got ",
                                                   options.queue_depth));
  }
  return absl::OkStatus();
}

AsyncIo::AsyncIo(const AioOptions& options)
    : options_(options), queue_(std::make_unique<IoQueue>(options)) {}

absl::StatusOr<std::unique_ptr<AsyncIo>> AsyncIo::Create(const AioOptions& options) {
  ACCEL_RETURN_IF_ERROR(ValidateAioOptions(options));
  std::unique_ptr<AsyncIo> aio(new AsyncIo(options));
  if (options.backend != AioBackend::kThreads) {
    absl::StatusOr<std::unique_ptr<IoBackendImpl>> uring =
        StartUringBackend(aio->queue_.get(), options);
    if (uring.ok()) {
      aio->backend_ = std::move(uring).value();
      return aio;
    }
    if (options.backend == AioBackend::kIoUring) return uring.status();
    aio->fallback_reason_ = std::string(uring.status().message());
  }
  aio->backend_ = StartThreadBackend(aio->queue_.get(), options);
  return aio;
}

AsyncIo::~AsyncIo() {
  queue_->Shutdown(absl::CancelledError(
      "the I/O engine was destroyed before this request's pieces were issued"));
  backend_->Join();
  backend_.reset();  // before queue_, which its threads used
}

absl::StatusOr<IoTicket> AsyncIo::SubmitRead(BlockFile& file, int64_t offset, void* buf,
                                             int64_t bytes) {
  return queue_->Submit(file, /*write=*/false, offset, static_cast<char*>(buf), bytes);
}

absl::StatusOr<IoTicket> AsyncIo::SubmitWrite(BlockFile& file, int64_t offset, const void* buf,
                                              int64_t bytes) {
  // The engine never writes into a write's buffer; IoPiece just has one pointer type.
  return queue_->Submit(file, /*write=*/true, offset,
                        const_cast<char*>(static_cast<const char*>(buf)), bytes);
}

absl::Status AsyncIo::Wait(IoTicket ticket, absl::Time deadline) {
  return queue_->Wait(ticket, deadline);
}

absl::Status AsyncIo::WaitAll(absl::Time deadline) { return queue_->WaitAll(deadline); }

absl::Status AsyncIo::Read(BlockFile& file, int64_t offset, void* buf, int64_t bytes,
                           absl::Time deadline) {
  ACCEL_ASSIGN_OR_RETURN(IoTicket t, SubmitRead(file, offset, buf, bytes));
  return Wait(t, deadline);
}

absl::Status AsyncIo::Write(BlockFile& file, int64_t offset, const void* buf, int64_t bytes,
                            absl::Time deadline) {
  ACCEL_ASSIGN_OR_RETURN(IoTicket t, SubmitWrite(file, offset, buf, bytes));
  return Wait(t, deadline);
}

std::string_view AsyncIo::backend() const { return backend_->name(); }

int64_t AsyncIo::outstanding() const { return queue_->outstanding(); }

}  // namespace accel::io
