// Pieces of the NCCL backend shared by its creation (nccl_create.cc) and its operations
// (nccl_communicator.cc); internal to them: the Work handle, NCCL results as Status, polling a
// non-blocking communicator until its pending call finishes, the nominal traffic of an
// operation, and the two entry points the creation code needs into the running communicator.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/comm/communicator.h"

namespace accel::comm {

class NcclWork : public Work {
 public:
  explicit NcclWork(std::string name) : name_(std::move(name)) {}
  absl::Status Wait(absl::Duration timeout) override;
  bool Done() const override;
  // The first call wins; later ones are ignored.
  void Complete(absl::Status status);
  const std::string& name() const { return name_; }

 private:
  const std::string name_;
  mutable absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

// OK for ncclSuccess. Otherwise the call, `where`, NCCL's name for the result and, when `comm`
// is not null, its last error text. InvalidArgument for ncclInvalidArgument/ncclInvalidUsage,
// Unavailable for ncclSystemError/ncclRemoteError (a peer or the network), Internal otherwise.
absl::Status NcclStatus(ncclResult_t result, const char* call, ncclComm_t comm,
                        const std::string& where);

// Polls ncclCommGetAsyncError until the state is not ncclInProgress or `deadline` passes; returns
// the last state (ncclInProgress on timeout).
ncclResult_t WaitNotInProgress(ncclComm_t comm, absl::Time deadline);

class NcclCommunicator;
struct NcclOptions;

// The running communicator over an initialised `comm` (nccl_communicator.cc); takes ownership of
// comm, stream and barrier_buf (one device float).
std::unique_ptr<NcclCommunicator> WrapNcclComm(ncclComm_t comm, int rank, int size, int device,
                                               cudaStream_t stream, float* barrier_buf,
                                               const NcclOptions& options);
// ncclCommSplit on `parent`'s communicator under its lock (nccl_communicator.cc); the child is
// initialised when this returns. InvalidArgument if `parent` is not ours.
absl::StatusOr<ncclComm_t> SplitNcclComm(NcclCommunicator& parent, int color, int key,
                                         absl::Time deadline);

// Waits for a non-blocking init or split of `comm` to finish: OK, the NCCL error as Status, or
// DeadlineExceeded naming `what` at the deadline (the caller then aborts `comm`).
absl::Status WaitInitialised(ncclComm_t comm, absl::Time deadline, const std::string& what);

// One rank's nominal ring traffic for an operation of `count` elements of `esize` bytes in a
// group of `size`: {sent, received} (CommStats of the NCCL backend; nccl_communicator.h).
std::pair<int64_t, int64_t> NcclNominalBytes(OpKind kind, size_t count, size_t esize, int rank,
                                             int size, int root);

}  // namespace accel::comm
