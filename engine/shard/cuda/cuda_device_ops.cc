#include "engine/shard/cuda/cuda_device_ops.h"

#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "engine/comm/nccl_communicator.h"
#include "engine/tensor/cuda/device.h"
#include "engine/kernels/cuda/kernels.h"

namespace accel::shard {
namespace {

absl::StatusOr<comm::NcclCommunicator*> Nccl(comm::Communicator& comm) {
  auto* nccl = dynamic_cast<comm::NcclCommunicator*>(&comm);
  if (nccl == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the sharding engine on a CUDA device needs NCCL communicators; rank ", comm.rank(),
        " of ", comm.size(), " has another backend, which cannot read device memory"));
  }
  return nccl;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaDeviceOps>> CudaDeviceOps::Create(
    cuda::CachingAllocator* allocator, cudaStream_t stream) {
  if (allocator == nullptr || stream == nullptr) {
    return absl::InvalidArgumentError("CudaDeviceOps needs an allocator and a stream");
  }
  std::unique_ptr<CudaDeviceOps> ops(new CudaDeviceOps(allocator, stream));
  ACCEL_ASSIGN_OR_RETURN(ops->norm_,
                         allocator->Allocate(sizeof(double), MemoryCategory::kOther, stream));
  return ops;
}

CudaDeviceOps::~CudaDeviceOps() {
  if (norm_ != nullptr) (void)allocator_->Free(norm_);
  (void)cudaStreamSynchronize(stream_);
  for (const auto& [before, after] : waits_) {
    cudaEventDestroy(before);
    cudaEventDestroy(after);
  }
  for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
}

absl::StatusOr<cudaEvent_t> CudaDeviceOps::TimingEvent() {
  if (!free_events_.empty()) {
    cudaEvent_t e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  ACCEL_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));
  return e;
}

double CudaDeviceOps::TakeStreamWaitSeconds() {
  double seconds = 0;
  for (const auto& [before, after] : waits_) {
    float ms = 0;
    // Not ready (the caller did not synchronise) or failed: that wait is not counted.
    if (cudaEventElapsedTime(&ms, before, after) == cudaSuccess) seconds += ms * 1e-3;
    free_events_.push_back(before);
    free_events_.push_back(after);
  }
  (void)cudaGetLastError();  // a not-ready query must not surface at the next launch check
  waits_.clear();
  return seconds;
}

absl::StatusOr<DeviceBlock> CudaDeviceOps::Acquire(size_t bytes, MemoryCategory category,
                                                   bool zero) {
  if (bytes == 0) return DeviceBlock();
  ACCEL_ASSIGN_OR_RETURN(void* data,
                         allocator_->Allocate(static_cast<int64_t>(bytes), category, stream_));
  DeviceBlock block(this, data, bytes);
  if (zero) ACCEL_RETURN_IF_ERROR(Zero(data, bytes));
  return block;
}

absl::StatusOr<DeviceBlock> CudaDeviceOps::Allocate(size_t bytes, MemoryCategory category) {
  return Acquire(bytes, category, /*zero=*/true);
}

void CudaDeviceOps::Free(void* data, size_t) {
  if (absl::Status s = allocator_->Free(data); !s.ok()) {
    ACCEL_LOG(error, "CudaDeviceOps: {}", s.ToString());
  }
}

absl::Status CudaDeviceOps::Zero(void* dst, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, 0, bytes, stream_));
  return absl::OkStatus();
}

absl::Status CudaDeviceOps::Copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return absl::OkStatus();
  ACCEL_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  return absl::OkStatus();
}

absl::Status CudaDeviceOps::Convert(const void* src, DType src_dtype, void* dst, DType dst_dtype,
                                    int64_t n) {
  return kernels::cuda::ConvertDType(src, src_dtype, dst, dst_dtype, n, stream_);
}

absl::Status CudaDeviceOps::Accumulate(void* dst, const void* src, int64_t n, DType dtype) {
  return kernels::cuda::AccumulateInDType(dst, src, n, dtype, stream_);
}

absl::Status CudaDeviceOps::Scale(float* x, int64_t n, float factor) {
  return kernels::cuda::Scale(x, n, factor, stream_);
}

absl::StatusOr<double> CudaDeviceOps::SumOfSquares(std::span<const FloatSpan> parts) {
  ACCEL_RETURN_IF_ERROR(Zero(norm_, sizeof(double)));
  for (const FloatSpan& p : parts) {
    if (p.n == 0) continue;
    ACCEL_RETURN_IF_ERROR(kernels::cuda::SquaredL2Norm(static_cast<double*>(norm_), p.data,
                                                       DType::kF32, p.n, /*accumulate=*/true,
                                                       stream_));
  }
  double total = 0;
  ACCEL_RETURN_IF_ERROR(ToHost(&total, norm_, sizeof(double)));
  return total;
}

absl::Status CudaDeviceOps::ToHost(void* host, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_));
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status CudaDeviceOps::FromHost(void* dst, const void* host, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_));
  // Pageable host memory: the caller may reuse it as soon as this returns.
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status CudaDeviceOps::Synchronize() {
  ACCEL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status CudaDeviceOps::AdamWUpdate(float* params, float* m, float* v, const float* grads,
                                        int64_t n, const kernels::AdamWHyper& hyper) {
  return kernels::cuda::AdamWUpdate(params, m, v, grads, DType::kF32, n, hyper, nullptr,
                                    DType::kF32, stream_);
}

absl::Status CudaDeviceOps::AdamWUpdateBf16(uint16_t* params, uint16_t* m, uint16_t* v,
                                            const float* grads, int64_t n,
                                            const kernels::AdamWHyper& hyper) {
  return kernels::cuda::AdamWUpdateBf16(params, m, v, grads, n, hyper, stream_);
}

absl::Status CudaDeviceOps::BeforeCollective(comm::Communicator& comm) {
  ACCEL_ASSIGN_OR_RETURN(comm::NcclCommunicator * nccl, Nccl(comm));
  return nccl->OrderAfter(stream_);
}

absl::Status CudaDeviceOps::AfterCollective(comm::Communicator& comm,
                                            const std::shared_ptr<comm::Work>& work,
                                            absl::Duration) {
  ACCEL_ASSIGN_OR_RETURN(comm::NcclCommunicator * nccl, Nccl(comm));
  ACCEL_ASSIGN_OR_RETURN(cudaEvent_t before, TimingEvent());
  ACCEL_ASSIGN_OR_RETURN(cudaEvent_t after, TimingEvent());
  waits_.emplace_back(before, after);
  ACCEL_CUDA_RETURN_IF_ERROR(cudaEventRecord(before, stream_));
  ACCEL_RETURN_IF_ERROR(nccl->MakeStreamWaitFor(work, stream_));
  ACCEL_CUDA_RETURN_IF_ERROR(cudaEventRecord(after, stream_));
  return absl::OkStatus();
}

}  // namespace accel::shard
