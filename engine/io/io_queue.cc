#include "engine/io/io_queue.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/io/aligned_buffer.h"

namespace accel::io {
namespace {

const char* OpName(bool write) { return write ? "write" : "read"; }

}  // namespace

IoQueue::IoQueue(const AioOptions& options) : options_(options) {}

absl::StatusOr<IoTicket> IoQueue::Submit(BlockFile& file, bool write, int64_t offset, char* buf,
                                         int64_t bytes) {
  ACCEL_RETURN_IF_ERROR(file.CheckTransfer(offset, buf, bytes));
  // A piece must keep the file's alignment even if block_size (a multiple of 4096) is smaller
  // than an unusual direct-I/O alignment.
  const int64_t piece_bytes = PadTo(options_.block_size, file.alignment());
  IoTicket ticket = 0;
  int64_t pieces = 0;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the I/O engine is shutting down: cannot ", OpName(write), " ", file.path()));
    }
    ticket = next_ticket_++;
    for (int64_t done = 0; done < bytes; done += piece_bytes, ++pieces) {
      queue_.push_back(IoPiece{ticket, &file, write, offset + done, buf + done,
                               std::min(piece_bytes, bytes - done)});
    }
    requests_[ticket] = Request{&file, write, offset, bytes, pieces, absl::OkStatus()};
    if (pieces > 0) changed_.SignalAll();
  }
  if (pieces > 0 && wake_) wake_();
  return ticket;
}

int IoQueue::IssuableLocked() {
  const int64_t queued = static_cast<int64_t>(queue_.size());
  if (options_.overlap_events) {
    return static_cast<int>(std::min(queued, options_.queue_depth - in_flight_));
  }
  // Batch mode: a batch opens only when the previous one has fully completed.
  if (batch_left_ == 0 && in_flight_ == 0) {
    batch_left_ = std::min<int64_t>(queued, options_.queue_depth);
  }
  return static_cast<int>(std::min(queued, batch_left_));
}

bool IoQueue::Take(int max, bool block, std::vector<IoPiece>* out) {
  int taken = 0;
  {
    absl::MutexLock lock(&mu_);
    while (block && !shut_down_ && IssuableLocked() == 0) changed_.Wait(&mu_);
    if (shut_down_) return false;
    taken = std::min(max, IssuableLocked());
    for (int i = 0; i < taken; ++i) {
      out->push_back(queue_.front());
      queue_.pop_front();
    }
    in_flight_ += taken;
    if (!options_.overlap_events) batch_left_ -= taken;
  }
  if (taken > 0 && options_.delay_for_testing > absl::ZeroDuration()) {
    absl::SleepFor(options_.delay_for_testing);
  }
  return true;
}

absl::Status IoQueue::CheckResult(const IoPiece& piece, int64_t result, IoPiece* retry,
                                  bool* again) {
  *again = false;
  const BlockFile& f = *piece.file;
  const std::string where = absl::StrCat(OpName(piece.write), " of ", piece.bytes,
                                         " bytes at offset ", piece.offset, " in ", f.path());
  if (result < 0) {
    const int err = static_cast<int>(-result);
    if (err == EINTR || err == EAGAIN) {
      *retry = piece;
      *again = true;
      return absl::OkStatus();
    }
    std::string msg = absl::StrCat(where, " failed: ", std::strerror(err));
    if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
    return absl::InternalError(msg);
  }
  if (result == 0 && piece.bytes > 0) {
    if (piece.write) return absl::DataLossError(absl::StrCat(where, " wrote 0 bytes"));
    return absl::DataLossError(absl::StrCat(where, " returned no data: the file (",
                                            f.size(), " bytes when opened) ends before offset ",
                                            piece.offset + piece.bytes));
  }
  if (result > piece.bytes) {
    return absl::InternalError(absl::StrCat(where, " reported ", result, " bytes"));
  }
  ACCEL_RETURN_IF_ERROR(f.AfterTransfer(piece.offset, result, piece.write));
  if (result < piece.bytes) {
    if (f.direct() && result % f.alignment() != 0) {
      return absl::DataLossError(absl::StrCat(
          where, " moved only ", result, " bytes, not a multiple of the direct-I/O alignment ",
          f.alignment(), ", so the rest cannot be retried"));
    }
    *retry = piece;
    retry->offset += result;
    retry->buf += result;
    retry->bytes -= result;
    *again = true;
  }
  return absl::OkStatus();
}

void IoQueue::Complete(const IoPiece& piece, int64_t result) {
  IoPiece retry;
  bool again = false;
  absl::Status s = CheckResult(piece, result, &retry, &again);
  {
    absl::MutexLock lock(&mu_);
    --in_flight_;
    if (again && !shut_down_) {
      queue_.push_front(retry);  // first in line: it belongs to the oldest request
    } else if (again) {
      FinishPieceLocked(piece.ticket, retry.offset,
                        absl::CancelledError(absl::StrCat(
                            "the I/O engine shut down before the rest of a short ",
                            OpName(piece.write), " at offset ", retry.offset, " in ",
                            piece.file->path(), " was retried")));
    } else {
      FinishPieceLocked(piece.ticket, piece.offset, std::move(s));
    }
    changed_.SignalAll();
  }
}

void IoQueue::FinishPieceLocked(IoTicket ticket, int64_t offset, absl::Status status) {
  auto it = requests_.find(ticket);
  if (it == requests_.end()) return;
  Request& r = it->second;
  // Pieces complete in any order; report the failure nearest the start of the request, which
  // is deterministic and, for a truncated file, names where the data ends.
  if (!status.ok() && (r.status.ok() || offset < r.error_offset)) {
    r.status = std::move(status);
    r.error_offset = offset;
  }
  --r.pieces_left;
}

absl::Status IoQueue::DeadlineError(const Request& r, IoTicket ticket) const {
  return absl::DeadlineExceededError(absl::StrCat(
      OpName(r.write), " of ", r.bytes, " bytes at offset ", r.offset, " in ", r.file->path(),
      " (ticket ", ticket, ") not complete by the deadline; ", r.pieces_left,
      " pieces still pending"));
}

absl::Status IoQueue::Wait(IoTicket ticket, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  // Look the request up again after every wait: a concurrent Submit may rehash the map.
  auto pending = [&]() -> const Request* {
    auto it = requests_.find(ticket);
    return it == requests_.end() ? nullptr : &it->second;
  };
  if (pending() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown or already-waited I/O ticket ", ticket));
  }
  while (pending() != nullptr && pending()->pieces_left > 0) {
    if (changed_.WaitWithDeadline(&mu_, deadline)) {
      const Request* r = pending();
      if (r != nullptr && r->pieces_left > 0) return DeadlineError(*r, ticket);
    }
  }
  const Request* r = pending();
  if (r == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("I/O ticket ", ticket, " was consumed by a concurrent wait"));
  }
  absl::Status status = r->status;
  requests_.erase(ticket);
  return status;
}

absl::Status IoQueue::WaitAll(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto first_incomplete = [&]() -> std::pair<IoTicket, const Request*> {
    std::pair<IoTicket, const Request*> first{0, nullptr};
    for (const auto& [t, r] : requests_) {
      if (r.pieces_left > 0 && (first.second == nullptr || t < first.first)) first = {t, &r};
    }
    return first;
  };
  while (first_incomplete().second != nullptr) {
    if (changed_.WaitWithDeadline(&mu_, deadline)) {
      auto [t, r] = first_incomplete();
      if (r != nullptr) return DeadlineError(*r, t);
    }
  }
  IoTicket first_bad = 0;
  absl::Status status;
  for (const auto& [t, r] : requests_) {
    if (!r.status.ok() && (first_bad == 0 || t < first_bad)) {
      first_bad = t;
      status = r.status;
    }
  }
  requests_.clear();
  return status;
}

void IoQueue::Shutdown(const absl::Status& why) {
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    for (const IoPiece& p : queue_) FinishPieceLocked(p.ticket, p.offset, why);
    queue_.clear();
    changed_.SignalAll();
  }
  if (wake_) wake_();
}

int64_t IoQueue::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

int64_t IoQueue::outstanding() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(requests_.size());
}

}  // namespace accel::io
