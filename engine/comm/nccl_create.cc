// Creating NCCL communicators (nccl_communicator.h): the unique id through the store, the
// non-blocking initialisation under a deadline, ncclCommSplit, and the resources every
// communicator owns (its stream, the barrier's float). The running communicator is in
// nccl_communicator.cc.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/base/status_macros.h"
#include "engine/comm/nccl_communicator.h"
#include "engine/comm/nccl_util.h"
#include "engine/tensor/cuda/device.h"

namespace accel::comm {
namespace {

// Wraps an initialised NCCL communicator: its stream, the barrier's float, the watchdog. On
// failure the communicator is aborted and whatever was made is released.
absl::StatusOr<std::unique_ptr<NcclCommunicator>> Finish(ncclComm_t comm, int device,
                                                         const NcclOptions& options,
                                                         const std::string& where) {
  cudaStream_t stream = nullptr;
  float* barrier = nullptr;
  auto fail = [&](absl::Status s) {
    ncclCommAbort(comm);
    if (barrier != nullptr) cudaFree(barrier);
    if (stream != nullptr) cudaStreamDestroy(stream);
    return Annotate(s, where);
  };
  int rank = 0, size = 0;
  if (absl::Status s = NcclStatus(ncclCommUserRank(comm, &rank), "ncclCommUserRank", comm, where);
      !s.ok()) {
    return fail(s);
  }
  if (absl::Status s = NcclStatus(ncclCommCount(comm, &size), "ncclCommCount", comm, where);
      !s.ok()) {
    return fail(s);
  }
  auto cuda = [](cudaError_t e, const char* call) {
    return ::accel::cuda::CudaStatus(static_cast<int>(e), call, __FILE__, __LINE__);
  };
  if (absl::Status s = cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                            "cudaStreamCreateWithFlags");
      !s.ok()) {
    return fail(s);
  }
  if (absl::Status s = cuda(cudaMalloc(&barrier, sizeof(float)), "cudaMalloc"); !s.ok()) {
    return fail(s);
  }
  if (absl::Status s = cuda(cudaMemset(barrier, 0, sizeof(float)), "cudaMemset"); !s.ok()) {
    return fail(s);
  }
  return WrapNcclComm(comm, rank, size, device, stream, barrier, options);
}

absl::Status CheckOptions(const NcclOptions& options, const std::string& where) {
  if (options.timeout <= absl::ZeroDuration() || options.poll_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(where + ": timeout and poll interval must be positive");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<NcclCommunicator>> CreateNcclCommunicator(
    Store* store, const std::string& group_name, int rank, int size, int device,
    const NcclOptions& options) {
  const std::string where =
      absl::StrCat("nccl group '", group_name, "' rank ", rank, " of ", size, " (device ", device,
                   ")");
  if (store == nullptr) return absl::InvalidArgumentError(where + ": null store");
  if (size < 1 || rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(where + ": rank outside the group");
  }
  if (group_name.empty()) return absl::InvalidArgumentError(where + ": empty group name");
  if (device < 0) return absl::InvalidArgumentError(where + ": negative device");
  ACCEL_RETURN_IF_ERROR(CheckOptions(options, where));
  const absl::Time deadline = absl::Now() + options.timeout;

  // The unique id first: a rank whose peers never come fails here, before touching the device.
  std::unique_ptr<Store> prefixed = PrefixStore(group_name, store);
  const std::string key = "nccl_unique_id";
  ncclUniqueId id;
  if (rank == 0) {
    ACCEL_RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr, where));
    ACCEL_RETURN_IF_ERROR(
        Annotate(prefixed->Set(key, std::string(id.internal, sizeof(id.internal))), where));
  } else {
    absl::StatusOr<std::string> got = prefixed->Get(key, options.timeout);
    if (!got.ok()) return Annotate(got.status(), where + ": waiting for rank 0's NCCL id");
    if (got->size() != sizeof(id.internal)) {
      return absl::DataLossError(absl::StrCat(where, ": store key '", group_name, "/", key,
                                              "' holds ", got->size(), " bytes, expected ",
                                              sizeof(id.internal)));
    }
    std::memcpy(id.internal, got->data(), sizeof(id.internal));
  }

  ACCEL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that a missing peer can be given up on at the deadline
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    absl::Status s = NcclStatus(r, "ncclCommInitRankConfig", comm, where);
    if (comm != nullptr) ncclCommAbort(comm);
    return s;
  }
  if (absl::Status s = WaitInitialised(comm, deadline, where); !s.ok()) {
    ncclCommAbort(comm);
    return s;
  }
  return Finish(comm, device, options, where);
}

absl::StatusOr<std::unique_ptr<NcclCommunicator>> CreateNcclCommunicatorSplit(
    NcclCommunicator& parent, int color, int key, const NcclOptions& options) {
  const std::string where = absl::StrCat("nccl split of rank ", parent.rank(), " of ",
                                         parent.size(), " (color ", color, ", key ", key, ")");
  if (color < 0) return absl::InvalidArgumentError(where + ": color must be >= 0");
  ACCEL_RETURN_IF_ERROR(CheckOptions(options, where));
  ACCEL_ASSIGN_OR_RETURN(ncclComm_t child,
                         SplitNcclComm(parent, color, key, absl::Now() + options.timeout));
  return Finish(child, parent.device(), options, where);
}

}  // namespace accel::comm
