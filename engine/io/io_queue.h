// IoQueue: the backend-independent half of AsyncIo (internal to engine/io). It owns the
// requests and their pieces, decides which pieces may be issued (queue_depth, overlap_events),
// checks every completion's byte count, and wakes waiters. Backends (io_uring, threads) only
// move bytes: they Take pieces, perform them, and report each result through Complete.
//
// Thread-safe: one mutex guards everything; Complete may run on any backend thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/io/async_io.h"
#include "engine/io/block_file.h"

namespace accel::io {

// One contiguous transfer of at most block_size bytes; after a short transfer its offset and
// buffer advance and it is issued again for the remainder.
struct IoPiece {
  IoTicket ticket = 0;
  BlockFile* file = nullptr;
  bool write = false;
  int64_t offset = 0;
  char* buf = nullptr;
  int64_t bytes = 0;
};

class IoQueue {
 public:
  explicit IoQueue(const AioOptions& options);

  // Called (outside the lock) when pieces become issuable or on shutdown.
  void SetWake(std::function<void()> wake) { wake_ = std::move(wake); }

  [[nodiscard]] absl::StatusOr<IoTicket> Submit(BlockFile& file, bool write, int64_t offset,
                                                char* buf, int64_t bytes);
  [[nodiscard]] absl::Status Wait(IoTicket ticket, absl::Time deadline);
  [[nodiscard]] absl::Status WaitAll(absl::Time deadline);
  int64_t outstanding() const;

  // Appends up to `max` issuable pieces to `out` and counts them in flight. With `block`,
  // waits until at least one is issuable or Shutdown was called. Returns false once shut down
  // (then nothing is appended).
  bool Take(int max, bool block, std::vector<IoPiece>* out);
  // Reports the result of an issued piece: bytes moved, or -errno.
  void Complete(const IoPiece& piece, int64_t result);
  // Fails every piece not yet issued with `why`, lets Take return false, wakes everyone.
  void Shutdown(const absl::Status& why);
  int64_t in_flight() const;

 private:
  struct Request {
    BlockFile* file = nullptr;
    bool write = false;
    int64_t offset = 0;
    int64_t bytes = 0;
    int64_t pieces_left = 0;
    absl::Status status;       // of the failing piece with the lowest offset
    int64_t error_offset = 0;  // that piece's offset
  };
  int IssuableLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `status` by value and drops it under the lock: a Status's refcount lives in
  // (uninstrumented) libabsl_status, so only the mutex orders its last release for TSan.
  void FinishPieceLocked(IoTicket ticket, int64_t offset, absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The error for a piece that moved `result` bytes (or failed with -errno); OK when the piece
  // is complete or should be retried (then *retry holds the remainder).
  absl::Status CheckResult(const IoPiece& piece, int64_t result, IoPiece* retry, bool* again);
  absl::Status DeadlineError(const Request& r, IoTicket ticket) const;

  const AioOptions options_;
  std::function<void()> wake_;
  mutable absl::Mutex mu_;
  absl::CondVar changed_;  // a request finished, or pieces became issuable
  std::deque<IoPiece> queue_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<IoTicket, Request> requests_ ABSL_GUARDED_BY(mu_);
  IoTicket next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t batch_left_ ABSL_GUARDED_BY(mu_) = 0;  // overlap_events == false only
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace accel::io
