// CudaDeviceOps: the sharding engine's buffers on one CUDA device (engine/shard/device_ops.h),
// so that ShardedModel runs every strategy on device memory over NCCL.
//
// Blocks come from a CachingAllocator, allocated for the compute stream; every operation is
// queued on that stream and returns at once, except ToHost, FromHost and SumOfSquares, which
// synchronise it. Recycled blocks go back to the allocator's cache (which is stream-ordered, so
// reuse needs no event); the ledger sees live blocks only, cached ones in the allocator's
// reserved bytes.
//
// Collectives must be NCCL's (comm::NcclCommunicator, on the same device):
//   - BeforeCollective makes the communicator's stream wait for all compute queued so far:
//     producers are done (gradients, rounded parameters) and a block recycled after its last
//     use can be overwritten by the collective;
//   - AfterCollective makes the compute stream wait for that one operation's event
//     (NcclCommunicator::MakeStreamWaitFor), so a prefetched gather overlaps the compute queued
//     before its consumer, and the host never blocks. Timing events on either side of that wait
//     measure how long the compute stream stood still (TakeStreamWaitSeconds).
// Any other Communicator is FailedPrecondition (a host backend cannot read device memory).
// Arithmetic: Convert, Accumulate and Scale are bit-exact with the host ops; SumOfSquares sums
// with atomics (to rounding, not bit-reproducible).
// Not thread-safe: one engine thread.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tensor/cuda/caching_allocator.h"
#include "engine/shard/device_ops.h"

namespace accel::shard {

class CudaDeviceOps final : public DeviceOps {
 public:
  // Not owning: `allocator` (its ledger is the one charged) and `stream`, on the current
  // device, must outlive the ops and every block they made.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CudaDeviceOps>> Create(
      cuda::CachingAllocator* allocator, cudaStream_t stream);
  ~CudaDeviceOps() override;

  cudaStream_t stream() const { return stream_; }

  bool host_addressable() const override { return false; }
  absl::StatusOr<DeviceBlock> Allocate(size_t bytes, MemoryCategory category) override;
  absl::StatusOr<DeviceBlock> Acquire(size_t bytes, MemoryCategory category, bool zero) override;
  void Recycle(DeviceBlock block) override { (void)std::move(block); }
  absl::Status Zero(void* dst, size_t bytes) override;
  absl::Status Copy(void* dst, const void* src, size_t bytes) override;
  absl::Status Convert(const void* src, DType src_dtype, void* dst, DType dst_dtype,
                       int64_t n) override;
  absl::Status Accumulate(void* dst, const void* src, int64_t n, DType dtype) override;
  absl::Status Scale(float* x, int64_t n, float factor) override;
  absl::StatusOr<double> SumOfSquares(std::span<const FloatSpan> parts) override;
  absl::Status ToHost(void* host, const void* src, size_t bytes) override;
  absl::Status FromHost(void* dst, const void* host, size_t bytes) override;
  absl::Status Synchronize() override;
  absl::Status AdamWUpdate(float* params, float* m, float* v, const float* grads, int64_t n,
                           const kernels::AdamWHyper& hyper) override;
  absl::Status AdamWUpdateBf16(uint16_t* params, uint16_t* m, uint16_t* v, const float* grads,
                               int64_t n, const kernels::AdamWHyper& hyper) override;
  // Timed from the two events recorded around each AfterCollective's wait.
  double TakeStreamWaitSeconds() override;
  absl::Status BeforeCollective(comm::Communicator& comm) override;
  absl::Status AfterCollective(comm::Communicator& comm, const std::shared_ptr<comm::Work>& work,
                               absl::Duration timeout) override;

 protected:
  void Free(void* data, size_t bytes) override;

 private:
  CudaDeviceOps(cuda::CachingAllocator* allocator, cudaStream_t stream)
      : allocator_(allocator), stream_(stream) {}

  cuda::CachingAllocator* allocator_;
  cudaStream_t stream_;
  absl::StatusOr<cudaEvent_t> TimingEvent();

  void* norm_ = nullptr;  // one device double for SumOfSquares
  std::vector<cudaEvent_t> free_events_;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> waits_;  // around each stream wait
};

}  // namespace accel::shard
