#include "engine/comm/nccl_util.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace accel::comm {

absl::Status NcclWork::Wait(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithTimeout(absl::Condition(&done_), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat(name_, " not done after waiting ", absl::FormatDuration(timeout)));
  }
  return status_;
}

bool NcclWork::Done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

void NcclWork::Complete(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (done_) return;
  status_ = std::move(status);
  done_ = true;
}

absl::Status NcclStatus(ncclResult_t result, const char* call, ncclComm_t comm,
                        const std::string& where) {
  if (result == ncclSuccess) return absl::OkStatus();
  std::string msg = absl::StrCat(where, ": ", call, " failed: ", ncclGetErrorString(result));
  if (comm != nullptr) {
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && last[0] != '\0') absl::StrAppend(&msg, " (", last, ")");
  }
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return absl::InvalidArgumentError(msg);
    case ncclSystemError:
    case ncclRemoteError:
      return absl::UnavailableError(msg);
    default:
      return absl::InternalError(msg);
  }
}

ncclResult_t WaitNotInProgress(ncclComm_t comm, absl::Time deadline) {
  absl::Duration backoff = absl::Microseconds(50);
  while (true) {
    ncclResult_t state = ncclInProgress;
    const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (absl::Now() >= deadline) return ncclInProgress;
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(10));
  }
}

absl::Status WaitInitialised(ncclComm_t comm, absl::Time deadline, const std::string& what) {
  const ncclResult_t r = WaitNotInProgress(comm, deadline);
  if (r == ncclInProgress) {
    return absl::DeadlineExceededError(
        absl::StrCat(what, ": not every rank joined before the deadline"));
  }
  return NcclStatus(r, "initialisation", comm, what);
}

// One rank's nominal ring traffic for an operation (see the header): {sent, received}.
std::pair<int64_t, int64_t> NcclNominalBytes(OpKind kind, size_t count, size_t esize, int rank,
                                         int size, int root) {
  if (size == 1) return {0, 0};
  const int64_t bytes = static_cast<int64_t>(count * esize);
  switch (kind) {
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
      return {bytes * (size - 1), bytes * (size - 1)};
    case OpKind::kAllReduce:
    case OpKind::kBarrier: {
      const int64_t b = 2 * bytes * (size - 1) / size;
      return {b, b};
    }
    case OpKind::kBroadcast:
      return {rank == root ? bytes : 0, rank == root ? 0 : bytes};
  }
  return {0, 0};
}

}  // namespace accel::comm
