// RMSNorm on the device (kernels.h; contract in ../rmsnorm.h): y = x · rstd · weight with
// rstd = 1 / sqrt(mean(x²) + eps), per row of C. One warp per row, fp32. Backward: with
// g = weight ⊙ dout, dinp += rstd · (g − x · rstd² · mean(g ⊙ x)); dweight is a column sum over
// rows of dout ⊙ x · rstd, gathered per block in shared memory and added to the output with one
// atomic per column per block (as LayerNorm's, so reproducible only to rounding).
#include <cuda_runtime.h>

#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kMaxBackwardBlocks = 512;

__global__ void RmsNormForwardKernel(float* out, float* rstd, const float* inp,
                                     const float* weight, int64_t N, int64_t C, float eps) {
  const int lane = threadIdx.x % 32;
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / 32;
  if (row >= N) return;  // whole warps leave together: the shuffles below stay full
  const float* x = inp + row * C;
  float sq = 0;
  for (int64_t c = lane; c < C; c += 32) sq += x[c] * x[c];
  const float s = 1.0f / sqrtf(WarpSum(sq) / static_cast<float>(C) + eps);
  float* y = out + row * C;
  for (int64_t c = lane; c < C; c += 32) y[c] = x[c] * s * weight[c];
  if (lane == 0) rstd[row] = s;
}

// dynamic shared memory: C floats (dweight partials).
__global__ void RmsNormBackwardKernel(float* dinp, float* dweight, const float* dout,
                                      const float* inp, const float* weight, const float* rstd,
                                      int64_t N, int64_t C) {
  extern __shared__ float dw[];
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) dw[c] = 0;
  __syncthreads();
  const int lane = threadIdx.x % 32;
  const int64_t warps_total = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / 32;
       row < N; row += warps_total) {
    const float* x = inp + row * C;
    const float* dy = dout + row * C;
    const float s = rstd[row];
    float gx_sum = 0;
    for (int64_t c = lane; c < C; c += 32) gx_sum += weight[c] * dy[c] * x[c];
    const float gx_mean = WarpSum(gx_sum) / static_cast<float>(C);
    float* dx = dinp + row * C;
    for (int64_t c = lane; c < C; c += 32) {
      dx[c] += s * (weight[c] * dy[c] - x[c] * s * s * gx_mean);
      atomicAdd(dw + c, dy[c] * x[c] * s);
    }
  }
  __syncthreads();
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) atomicAdd(dweight + c, dw[c]);
}

}  // namespace

absl::Status RmsNormForward(float* out, float* rstd, const float* inp, const float* weight,
                            int64_t N, int64_t C, float eps, cudaStream_t stream) {
  if (absl::Status s = CheckSizes("RmsNormForward", {N, C}); !s.ok()) return s;
  if (N == 0) return absl::OkStatus();
  if (C == 0) return absl::InvalidArgumentError("RmsNormForward: C = 0");
  if (!(eps >= 0.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("RmsNormForward: eps = ", eps, " is not >= 0"));
  }
  const int64_t blocks = (N + kWarpsPerBlock - 1) / kWarpsPerBlock;
  RmsNormForwardKernel<<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream>>>(
      out, rstd, inp, weight, N, C, eps);
  return ACCEL_CUDA_LAUNCH_STATUS("RmsNormForwardKernel");
}

absl::Status RmsNormBackward(float* dinp, float* dweight, const float* dout, const float* inp,
                             const float* weight, const float* rstd, int64_t N, int64_t C,
                             cudaStream_t stream) {
  if (absl::Status s = CheckSizes("RmsNormBackward", {N, C}); !s.ok()) return s;
  if (N == 0 || C == 0) return absl::OkStatus();
  const size_t shared_bytes = static_cast<size_t>(C) * sizeof(float);
  if (shared_bytes > 48 * 1024) {
    // Above the default limit the kernel must opt in; this fails (and we report it) when C is
    // beyond what the device's shared memory holds.
    ACCEL_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(RmsNormBackwardKernel,
                                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                    static_cast<int>(shared_bytes)));
  }
  const int64_t blocks =
      std::min<int64_t>((N + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxBackwardBlocks);
  RmsNormBackwardKernel<<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, shared_bytes,
                          stream>>>(dinp, dweight, dout, inp, weight, rstd, N, C);
  return ACCEL_CUDA_LAUNCH_STATUS("RmsNormBackwardKernel");
}

}  // namespace accel::kernels::cuda
