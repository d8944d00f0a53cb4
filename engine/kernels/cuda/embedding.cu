// Token + position embedding on the device (kernels.h; contract in ../embedding.h). Backward:
// dwte rows are shared by repeated tokens, so they accumulate through atomics; each dwpe row
// belongs to one position, so one thread sums it over the batch without atomics.
#include <cuda_runtime.h>

#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

__global__ void EmbeddingForwardKernel(float* out, const int32_t* tokens, const float* wte,
                                       const float* wpe, int64_t T, int64_t C, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t bt = i / C, c = i % C;
    const int64_t t = bt % T;
    out[i] = wte[static_cast<int64_t>(tokens[bt]) * C + c] + wpe[t * C + c];
  }
}

__global__ void EmbeddingBackwardWteKernel(float* dwte, const float* dout, const int32_t* tokens,
                                           int64_t C, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t bt = i / C, c = i % C;
    atomicAdd(dwte + static_cast<int64_t>(tokens[bt]) * C + c, dout[i]);
  }
}

__global__ void EmbeddingBackwardWpeKernel(float* dwpe, const float* dout, int64_t B, int64_t T,
                                           int64_t C) {
  const int64_t n = T * C;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float sum = 0;
    for (int64_t b = 0; b < B; ++b) sum += dout[b * n + i];
    dwpe[i] += sum;
  }
}

}  // namespace

absl::Status EmbeddingForward(float* out, const int32_t* tokens, const float* wte,
                              const float* wpe, int64_t B, int64_t T, int64_t C,
                              cudaStream_t stream) {
  if (absl::Status s = CheckSizes("EmbeddingForward", {B, T, C}); !s.ok()) return s;
  const int64_t n = B * T * C;
  if (n == 0) return absl::OkStatus();
  EmbeddingForwardKernel<<<GridFor(n), kThreads, 0, stream>>>(out, tokens, wte, wpe, T, C, n);
  return ACCEL_CUDA_LAUNCH_STATUS("EmbeddingForwardKernel");
}

absl::Status EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                               int64_t B, int64_t T, int64_t C, cudaStream_t stream) {
  if (absl::Status s = CheckSizes("EmbeddingBackward", {B, T, C}); !s.ok()) return s;
  const int64_t n = B * T * C;
  if (n == 0) return absl::OkStatus();
  EmbeddingBackwardWteKernel<<<GridFor(n), kThreads, 0, stream>>>(dwte, dout, tokens, C, n);
  ACCEL_RETURN_IF_ERROR(ACCEL_CUDA_LAUNCH_STATUS("EmbeddingBackwardWteKernel"));
  EmbeddingBackwardWpeKernel<<<GridFor(T * C), kThreads, 0, stream>>>(dwpe, dout, B, T, C);
  return ACCEL_CUDA_LAUNCH_STATUS("EmbeddingBackwardWpeKernel");
}

}  // namespace accel::kernels::cuda
