// The running NCCL communicator (nccl_communicator.h): operations on the communication stream,
// the watchdog, groups, stream ordering. Creation is in nccl_create.cc.
#include "engine/comm/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "engine/base/status_macros.h"
#include "engine/comm/nccl_util.h"
#include "engine/tensor/cuda/device.h"

namespace accel::comm {
namespace {

struct Pending {
  std::shared_ptr<NcclWork> work;
  cudaEvent_t event = nullptr;  // null while its group is still open
};

class NcclCommImpl : public NcclCommunicator {
 public:
  NcclCommImpl(ncclComm_t comm, int rank, int size, int device, cudaStream_t stream,
               float* barrier_buf, const NcclOptions& options)
      : comm_(comm),
        rank_(rank),
        size_(size),
        device_(device),
        stream_(stream),
        barrier_buf_(barrier_buf),
        options_(options),
        watchdog_([this] { Watch(); }) {}

  ~NcclCommImpl() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    watchdog_.join();
    absl::MutexLock lock(&mu_);
    (void)cudaSetDevice(device_);
    PollLocked();  // credit whatever finished meanwhile
    if (comm_ != nullptr) {
      if (!pending_.empty() || in_group_) {
        // Never wait for a peer on destruction: cancel what is still queued.
        AbortLocked(absl::CancelledError(absl::StrCat(Where(), ": communicator destroyed with ",
                                                      pending_.size(), " operations pending")));
      } else if (!Shutdown().ok()) {
        ncclCommAbort(comm_);
      }
      comm_ = nullptr;
    }
    for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
    if (order_event_ != nullptr) cudaEventDestroy(order_event_);
    cudaFree(barrier_buf_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const override { return device_; }
  cudaStream_t stream() const override { return stream_; }

  std::shared_ptr<Work> AllGather(const void* send, void* recv, size_t count,
                                  DType dtype) override {
    return Issue(OpKind::kAllGather, count, dtype, 0, count > 0 && (!send || !recv), [=, this] {
      return ncclAllGather(send, recv, count, NcclType(dtype), comm_, stream_);
    });
  }
  std::shared_ptr<Work> ReduceScatter(const void* send, void* recv, size_t count,
                                      DType dtype) override {
    return Issue(OpKind::kReduceScatter, count, dtype, 0, count > 0 && (!send || !recv),
                 [=, this] {
                   return ncclReduceScatter(send, recv, count, NcclType(dtype), ncclSum, comm_,
                                            stream_);
                 });
  }
  std::shared_ptr<Work> AllReduce(void* buf, size_t count, DType dtype) override {
    return Issue(OpKind::kAllReduce, count, dtype, 0, count > 0 && !buf, [=, this] {
      return ncclAllReduce(buf, buf, count, NcclType(dtype), ncclSum, comm_, stream_);
    });
  }
  std::shared_ptr<Work> Broadcast(void* buf, size_t count, DType dtype, int root) override {
    if (root < 0 || root >= size_) {
      auto work = std::make_shared<NcclWork>("broadcast");
      work->Complete(absl::InvalidArgumentError(
          absl::StrCat("broadcast root ", root, " outside the group of ", size_)));
      return work;
    }
    return Issue(OpKind::kBroadcast, count, dtype, root, count > 0 && !buf, [=, this] {
      return ncclBroadcast(buf, buf, count, NcclType(dtype), root, comm_, stream_);
    });
  }
  std::shared_ptr<Work> Barrier() override {
    return Issue(OpKind::kBarrier, 1, DType::kF32, 0, false, [this] {
      return ncclAllReduce(barrier_buf_, barrier_buf_, 1, ncclFloat32, ncclSum, comm_, stream_);
    });
  }

  CommStats stats() const override {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

  absl::Status broken() const override {
    absl::MutexLock lock(&mu_);
    return broken_;
  }

  absl::Status OrderAfter(cudaStream_t producer) override {
    absl::MutexLock lock(&mu_);
    ACCEL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    ACCEL_ASSIGN_OR_RETURN(cudaEvent_t e, OrderEventLocked());
    ACCEL_CUDA_RETURN_IF_ERROR(cudaEventRecord(e, producer));
    ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, e, 0));
    return absl::OkStatus();
  }

  absl::Status MakeStreamWait(cudaStream_t consumer) override {
    absl::MutexLock lock(&mu_);
    ACCEL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    ACCEL_ASSIGN_OR_RETURN(cudaEvent_t e, OrderEventLocked());
    ACCEL_CUDA_RETURN_IF_ERROR(cudaEventRecord(e, stream_));
    ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(consumer, e, 0));
    return absl::OkStatus();
  }

  absl::Status MakeStreamWaitFor(const std::shared_ptr<Work>& work,
                                 cudaStream_t consumer) override {
    {
      absl::MutexLock lock(&mu_);
      for (const Pending& p : pending_) {
        if (p.work.get() != work.get()) continue;
        if (p.event == nullptr) {
          return absl::FailedPreconditionError(
              absl::StrCat(p.work->name(), ": waited for inside an open group"));
        }
        // Waits for the event's record as of now; the watchdog re-records it only after this
        // operation has completed, so the wait is never for a later one.
        ACCEL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
        ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(consumer, p.event, 0));
        return absl::OkStatus();
      }
    }
    // Not pending: it has completed (successfully or not), or it is not ours.
    if (!work->Done()) {
      return absl::InvalidArgumentError(Where() + ": MakeStreamWaitFor on a Work of another "
                                                  "communicator");
    }
    return work->Wait(absl::ZeroDuration());
  }

  absl::Status BeginGroup() override {
    absl::MutexLock lock(&mu_);
    if (in_group_) return absl::FailedPreconditionError(Where() + ": BeginGroup inside a group");
    ACCEL_RETURN_IF_ERROR(broken_);
    ACCEL_RETURN_IF_ERROR(Check(ncclGroupStart(), "ncclGroupStart"));
    in_group_ = true;
    return absl::OkStatus();
  }

  absl::Status EndGroup() override {
    absl::MutexLock lock(&mu_);
    if (!in_group_) return absl::FailedPreconditionError(Where() + ": EndGroup without BeginGroup");
    in_group_ = false;
    // End the group even when broken: NCCL's group depth is per thread and must stay balanced.
    const ncclResult_t ended = ncclGroupEnd();
    ACCEL_RETURN_IF_ERROR(broken_);
    absl::Status s = Check(ended, "ncclGroupEnd");
    for (Pending& p : pending_) {
      if (s.ok() && p.event == nullptr) s = RecordLocked(p);
    }
    if (!s.ok()) AbortLocked(s);
    return s;
  }

  // Collective on the parent; see CreateNcclCommunicatorSplit.
  absl::StatusOr<ncclComm_t> Split(int color, int key, absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    ACCEL_RETURN_IF_ERROR(broken_);
    if (in_group_) return absl::FailedPreconditionError(Where() + ": split inside a group");
    ACCEL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t child = nullptr;
    ACCEL_RETURN_IF_ERROR(Check(ncclCommSplit(comm_, color, key, &child, &config),
                                "ncclCommSplit"));
    absl::Status s = WaitInitialised(child, deadline, Where() + ": ncclCommSplit");
    if (!s.ok()) {
      if (child != nullptr) ncclCommAbort(child);
      return s;
    }
    return child;
  }

 private:
  static ncclDataType_t NcclType(DType d) {
    switch (d) {
      case DType::kF32: return ncclFloat32;
      case DType::kBF16: return ncclBfloat16;
      case DType::kF16: return ncclFloat16;
    }
    return ncclFloat32;
  }

  std::string Where() const { return absl::StrCat("nccl rank ", rank_, " of ", size_); }
  std::string Name(OpKind kind, uint64_t seq) const {
    return absl::StrCat(std::string(OpKindName(kind)), " #", seq, " on ", Where());
  }

  absl::Status Check(ncclResult_t r, const char* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (r == ncclInProgress) {
      r = WaitNotInProgress(comm_, absl::Now() + options_.timeout);
      if (r == ncclInProgress) {
        return absl::DeadlineExceededError(absl::StrCat(Where(), ": ", call, " still in progress after ",
                                                        absl::FormatDuration(options_.timeout)));
      }
    }
    return NcclStatus(r, call, comm_, Where());
  }

  std::shared_ptr<Work> Issue(OpKind kind, size_t count, DType dtype, int root, bool null_buffer,
                              const std::function<ncclResult_t()>& call) {
    absl::MutexLock lock(&mu_);
    const uint64_t seq = next_seq_++;
    stats_.ops[static_cast<int>(kind)].calls++;
    auto work = std::make_shared<NcclWork>(Name(kind, seq));
    if (!broken_.ok()) {
      work->Complete(broken_);
      return work;
    }
    if (null_buffer) {
      work->Complete(absl::InvalidArgumentError(Name(kind, seq) + ": null buffer, nonzero count"));
      return work;
    }
    if (absl::Status s = CudaSetDeviceStatus(); !s.ok()) {
      work->Complete(s);
      return work;
    }
    absl::Status s = Check(call(), std::string(OpKindName(kind)).c_str());
    if (!s.ok()) {
      AbortLocked(s);
      work->Complete(s);
      return work;
    }
    const auto [sent, received] = NcclNominalBytes(kind, count, DTypeSize(dtype), rank_, size_, root);
    stats_.ops[static_cast<int>(kind)].bytes_sent += sent;
    stats_.ops[static_cast<int>(kind)].bytes_received += received;
    if (pending_.empty()) front_since_ = absl::Now();
    pending_.push_back(Pending{work, nullptr});
    if (!in_group_) {
      if (absl::Status r = RecordLocked(pending_.back()); !r.ok()) AbortLocked(r);
    }
    return work;
  }

  absl::Status CudaSetDeviceStatus() {
    ACCEL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    return absl::OkStatus();
  }

  absl::Status RecordLocked(Pending& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (free_events_.empty()) {
      cudaEvent_t e = nullptr;
      ACCEL_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      free_events_.push_back(e);
    }
    p.event = free_events_.back();
    free_events_.pop_back();
    ACCEL_CUDA_RETURN_IF_ERROR(cudaEventRecord(p.event, stream_));
    return absl::OkStatus();
  }

  absl::StatusOr<cudaEvent_t> OrderEventLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (order_event_ == nullptr) {
      ACCEL_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming));
    }
    return order_event_;
  }

  // Completes the finished operations at the front of the queue, in order.
  void PollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!pending_.empty() && pending_.front().event != nullptr) {
      Pending& p = pending_.front();
      const cudaError_t q = cudaEventQuery(p.event);
      if (q == cudaErrorNotReady) return;
      if (q != cudaSuccess) {
        AbortLocked(::accel::cuda::CudaStatus(static_cast<int>(q), "cudaEventQuery", __FILE__,
                                              __LINE__));
        return;
      }
      free_events_.push_back(p.event);
      p.work->Complete(absl::OkStatus());
      pending_.pop_front();
      front_since_ = absl::Now();
    }
  }

  void Watch() {
    (void)cudaSetDevice(device_);
    absl::MutexLock lock(&mu_);
    while (!stopping_) {
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.poll_interval);
      if (stopping_ || comm_ == nullptr) continue;
      PollLocked();
      if (pending_.empty() || comm_ == nullptr) continue;
      ncclResult_t async = ncclSuccess;
      ncclResult_t r = ncclCommGetAsyncError(comm_, &async);
      if (r != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        const ncclResult_t e = r != ncclSuccess ? r : async;
        AbortLocked(absl::UnavailableError(absl::StrCat(
            pending_.front().work->name(), ": NCCL reported ", ncclGetErrorString(e), ": ",
            ncclGetLastError(comm_), " (a peer may be gone)")));
      } else if (absl::Now() - front_since_ > options_.timeout) {
        AbortLocked(absl::DeadlineExceededError(absl::StrCat(
            pending_.front().work->name(), ": not done ", absl::FormatDuration(options_.timeout),
            " after it became the oldest pending operation (a peer may be gone or stalled)")));
      }
    }
  }

  // Breaks the communicator: remembers `status`, aborts NCCL (its kernels end, so the stream
  // moves on), and fails every pending operation with `status`.
  void AbortLocked(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (broken_.ok()) broken_ = status;
    if (comm_ != nullptr) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    for (Pending& p : pending_) {
      if (p.event != nullptr) cudaEventDestroy(p.event);
      p.work->Complete(broken_);
    }
    pending_.clear();
  }

  // Clean shutdown when nothing is pending: finalize (flushes NCCL's own work), then destroy.
  absl::Status Shutdown() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ACCEL_RETURN_IF_ERROR(Check(ncclCommFinalize(comm_), "ncclCommFinalize"));
    ACCEL_RETURN_IF_ERROR(NcclStatus(ncclCommDestroy(comm_), "ncclCommDestroy", nullptr, Where()));
    return absl::OkStatus();
  }

  ncclComm_t comm_ ABSL_GUARDED_BY(mu_);
  const int rank_;
  const int size_;
  const int device_;
  const cudaStream_t stream_;
  float* const barrier_buf_;
  const NcclOptions options_;

  mutable absl::Mutex mu_;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<cudaEvent_t> free_events_ ABSL_GUARDED_BY(mu_);
  cudaEvent_t order_event_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Time front_since_ ABSL_GUARDED_BY(mu_);
  bool in_group_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  CommStats stats_ ABSL_GUARDED_BY(mu_);

  std::thread watchdog_;  // last: starts after everything it uses exists
};

}  // namespace

std::unique_ptr<NcclCommunicator> WrapNcclComm(ncclComm_t comm, int rank, int size, int device,
                                               cudaStream_t stream, float* barrier_buf,
                                               const NcclOptions& options) {
  return std::make_unique<NcclCommImpl>(comm, rank, size, device, stream, barrier_buf, options);
}

absl::StatusOr<ncclComm_t> SplitNcclComm(NcclCommunicator& parent, int color, int key,
                                         absl::Time deadline) {
  auto* impl = dynamic_cast<NcclCommImpl*>(&parent);
  if (impl == nullptr) return absl::InvalidArgumentError("ncclCommSplit: the parent is not ours");
  return impl->Split(color, key, deadline);
}

}  // namespace accel::comm
