#include "bench/gpu_bench_util.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "engine/base/status_macros.h"
#include "engine/tensor/cuda/device.h"
#include "engine/kernels/cuda/kernels.h"
#include "engine/tensor/cuda/stream.h"

namespace accel::bench {
namespace {

constexpr int64_t kPattern = int64_t{1} << 20;

// Copies `pattern_bytes` of `pattern` over dst until `bytes` are filled.
absl::Status Tile(void* dst, int64_t bytes, const void* pattern, int64_t pattern_bytes,
                  cudaStream_t stream) {
  for (int64_t off = 0; off < bytes; off += pattern_bytes) {
    const int64_t chunk = std::min(pattern_bytes, bytes - off);
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(dst) + off, pattern,
                                               static_cast<size_t>(chunk),
                                               cudaMemcpyDeviceToDevice, stream));
  }
  return absl::OkStatus();
}

}  // namespace

GpuArena::GpuArena(cudaStream_t stream)
    : stream_(stream), allocator_(cuda::CudaRawAllocator(0), nullptr) {}

absl::StatusOr<void*> GpuArena::Random(int64_t n, DType dtype) {
  if (pattern_ == nullptr) {
    std::vector<float> host(kPattern);
    uint32_t x = 0x9E3779B9u;
    for (float& v : host) {
      x = x * 1664525u + 1013904223u;
      v = (static_cast<float>(x >> 8) * 0x1.0p-24f - 0.5f) * 0.04f;
    }
    ACCEL_ASSIGN_OR_RETURN(pattern_, allocator_.Allocate(kPattern * 4, MemoryCategory::kOther,
                                                         stream_));
    ACCEL_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(pattern_, host.data(), kPattern * 4, cudaMemcpyHostToDevice));
  }
  ACCEL_ASSIGN_OR_RETURN(void* p, allocator_.Allocate(n * static_cast<int64_t>(DTypeSize(dtype)),
                                                      MemoryCategory::kOther, stream_));
  live_.push_back(p);
  if (dtype == DType::kF32) {
    ACCEL_RETURN_IF_ERROR(Tile(p, n * 4, pattern_, kPattern * 4, stream_));
    return p;
  }
  // Narrow types: one conversion of the pattern, tiled.
  ACCEL_ASSIGN_OR_RETURN(void* narrow, allocator_.Allocate(kPattern * 2, MemoryCategory::kOther,
                                                           stream_));
  ACCEL_RETURN_IF_ERROR(
      kernels::cuda::ConvertDType(pattern_, DType::kF32, narrow, dtype, kPattern, stream_));
  ACCEL_RETURN_IF_ERROR(Tile(p, n * 2, narrow, kPattern * 2, stream_));
  ACCEL_RETURN_IF_ERROR(allocator_.Free(narrow));
  return p;
}

absl::StatusOr<void*> GpuArena::Zeros(int64_t n, DType dtype) {
  const int64_t bytes = n * static_cast<int64_t>(DTypeSize(dtype));
  ACCEL_ASSIGN_OR_RETURN(void* p, allocator_.Allocate(bytes, MemoryCategory::kOther, stream_));
  live_.push_back(p);
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0, static_cast<size_t>(bytes), stream_));
  return p;
}

absl::StatusOr<int32_t*> GpuArena::Tokens(int64_t n, int32_t bound) {
  std::vector<int32_t> host(static_cast<size_t>(n));
  uint32_t x = 12345;
  for (int32_t& t : host) {
    x = x * 1664525u + 1013904223u;
    t = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(bound));
  }
  ACCEL_ASSIGN_OR_RETURN(void* p, allocator_.Allocate(n * 4, MemoryCategory::kOther, stream_));
  live_.push_back(p);
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpy(p, host.data(), static_cast<size_t>(n) * 4,
                                        cudaMemcpyHostToDevice));
  return static_cast<int32_t*>(p);
}

void GpuArena::Clear() {
  (void)cudaStreamSynchronize(stream_);
  for (void* p : live_) (void)allocator_.Free(p);
  live_.clear();
  if (pattern_ != nullptr) (void)allocator_.Free(pattern_);
  pattern_ = nullptr;
  allocator_.EmptyCache();
}

absl::StatusOr<double> TimeMs(cudaStream_t stream, int warmup, int iters,
                              const std::function<absl::Status()>& fn) {
  for (int i = 0; i < warmup; ++i) ACCEL_RETURN_IF_ERROR(fn());
  ACCEL_ASSIGN_OR_RETURN(cuda::Event start, cuda::Event::Create(true));
  ACCEL_ASSIGN_OR_RETURN(cuda::Event end, cuda::Event::Create(true));
  ACCEL_RETURN_IF_ERROR(start.Record(stream));
  for (int i = 0; i < iters; ++i) ACCEL_RETURN_IF_ERROR(fn());
  ACCEL_RETURN_IF_ERROR(end.Record(stream));
  ACCEL_RETURN_IF_ERROR(end.Synchronize());
  ACCEL_ASSIGN_OR_RETURN(float ms, cuda::Event::ElapsedMs(start, end));
  return static_cast<double>(ms) / std::max(iters, 1);
}

}  // namespace accel::bench
