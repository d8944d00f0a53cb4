// Shared pieces of the GPU benchmark (gpu_bench.cc, gpu_gpt2_step.cc): device buffers from one
// caching allocator, filled with a repeating pseudo-random pattern, and an event-timed loop.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/tensor/cuda/caching_allocator.h"
#include "engine/tensor/dtype.h"

namespace accel::bench {

class GpuArena {
 public:
  explicit GpuArena(cudaStream_t stream);
  // n elements of `dtype`, filled with values in [-0.02, 0.02) (a repeating pattern).
  absl::StatusOr<void*> Random(int64_t n, DType dtype);
  absl::StatusOr<void*> Zeros(int64_t n, DType dtype);
  // n int32 in [0, bound).
  absl::StatusOr<int32_t*> Tokens(int64_t n, int32_t bound);
  // Returns every buffer to the cache (and the cache to the device).
  void Clear();
  cuda::CachingAllocator& allocator() { return allocator_; }
  ~GpuArena() { Clear(); }

 private:
  cudaStream_t stream_;
  cuda::CachingAllocator allocator_;
  std::vector<void*> live_;
  void* pattern_ = nullptr;  // 1 Mi floats
};

// Mean milliseconds per call of `fn` over `iters` calls after `warmup` calls, timed by events on
// `stream`. The first error stops it.
absl::StatusOr<double> TimeMs(cudaStream_t stream, int warmup, int iters,
                              const std::function<absl::Status()>& fn);

}  // namespace accel::bench
