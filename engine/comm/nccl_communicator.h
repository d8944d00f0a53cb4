// The NCCL backend (GPU): the Communicator interface (communicator.h) over one NCCL
// communicator, its collectives queued on a dedicated CUDA stream. Built only when CUDA and NCCL
// are found (ACCEL_WITH_CUDA and NCCL::nccl).
//
// Buffers are device pointers on this communicator's device. An operation is queued on the
// communication stream when it is issued and its Work completes when the stream reaches the
// event recorded after it; Work::Wait blocks the host, so compute should rather order itself on
// the stream: OrderAfter(producer) before issuing (the collective waits for the producer
// stream's work so far) and MakeStreamWait(consumer) after (the consumer stream waits for the
// collectives so far) — no host synchronisation either way.
//
// Creation is collective: every rank calls CreateNcclCommunicator with the same store, group
// name and size. Rank 0 makes the ncclUniqueId and publishes it under "<group>/nccl_unique_id";
// the others read it (DeadlineExceeded naming the key if rank 0 does not publish within
// `timeout`). Initialisation is non-blocking and aborted at the deadline (DeadlineExceeded
// naming the group and rank), so a missing peer never hangs the caller.
//
// Failure: a watchdog thread polls the oldest pending operation and ncclCommGetAsyncError. A
// NCCL error (a peer gone, a network failure) becomes Unavailable with NCCL's message; an
// operation not done within `timeout` of reaching the front of the queue becomes
// DeadlineExceeded naming the operation and rank. Either way the watchdog calls ncclCommAbort,
// fails every pending Work with that status, and every later operation fails at once with it.
//
// Differences from the gloo backend's documented numerics: sums are NCCL's (bf16/f16 summed in
// fp32 inside each step; the order depends on NCCL's algorithm and topology, so bit-identical
// results across runs are not promised, and AllReduce need not equal ReduceScatter + AllGather
// bit for bit). CommStats counts each rank's nominal ring traffic ((size-1)/size of the data per
// phase), not bytes measured on the wire. Barrier is an all-reduce of one float.
//
// Thread-safety: operations may be issued from any thread (one mutex); BeginGroup/EndGroup must
// bracket operations issued from one thread with no other thread issuing in between.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/comm/communicator.h"
#include "engine/comm/store.h"

namespace accel::comm {

struct NcclOptions {
  // Deadline of the rendezvous and initialisation, and of each operation once it is the oldest
  // pending one.
  absl::Duration timeout = absl::Seconds(300);
  // How often the watchdog looks at the pending operations.
  absl::Duration poll_interval = absl::Milliseconds(2);
};

class NcclCommunicator : public Communicator {
 public:
  virtual int device() const = 0;
  // The dedicated communication stream (non-blocking).
  virtual cudaStream_t stream() const = 0;
  // Collectives issued after this call wait for the work queued on `producer` so far.
  [[nodiscard]] virtual absl::Status OrderAfter(cudaStream_t producer) = 0;
  // Work queued on `consumer` after this call waits for the collectives issued so far.
  [[nodiscard]] virtual absl::Status MakeStreamWait(cudaStream_t consumer) = 0;
  // Work queued on `consumer` after this call waits for `work` (an operation of this
  // communicator) alone, not for those issued after it: a prefetched gather does not hold up the
  // compute that needs an earlier one. OK at once when it has completed; its error when it
  // failed; FailedPrecondition inside an open group (its event is recorded at EndGroup);
  // InvalidArgument for a Work of another communicator.
  [[nodiscard]] virtual absl::Status MakeStreamWaitFor(const std::shared_ptr<Work>& work,
                                                       cudaStream_t consumer) = 0;
  // Operations issued between BeginGroup and EndGroup are fused into one NCCL launch
  // (ncclGroupStart/End); their Works complete together. Nesting is FailedPrecondition.
  [[nodiscard]] virtual absl::Status BeginGroup() = 0;
  [[nodiscard]] virtual absl::Status EndGroup() = 0;
  // The failure that broke the communicator, or OK.
  virtual absl::Status broken() const = 0;
};

// `device` is the CUDA device of this rank (made current on the calling thread). Does not own
// `store`, which is only used during the call.
[[nodiscard]] absl::StatusOr<std::unique_ptr<NcclCommunicator>> CreateNcclCommunicator(
    Store* store, const std::string& group_name, int rank, int size, int device,
    const NcclOptions& options = {});

// Hybrid sharding's sub-groups: every rank of `parent` calls this (collective on the parent);
// ranks with equal `color` (>= 0) form one new communicator, ranked by `key` (ties by parent
// rank), through ncclCommSplit. The new communicator has its own stream and watchdog; the
// parent stays usable.
[[nodiscard]] absl::StatusOr<std::unique_ptr<NcclCommunicator>> CreateNcclCommunicatorSplit(
    NcclCommunicator& parent, int color, int key, const NcclOptions& options = {});

}  // namespace accel::comm
