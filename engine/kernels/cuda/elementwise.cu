// GELU (tanh form) and the residual add on the device (kernels.h; contract in ../elementwise.h).
// fp32 throughout, against the CPU oracle's double: they agree to a few ulps.
#include <cuda_runtime.h>

#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

__global__ void GeluForwardKernel(float* out, const float* inp, int64_t n) {
  ACCEL_GRID_STRIDE(i, n) {
    const float x = inp[i];
    const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
    out[i] = 0.5f * x * (1.0f + tanhf(u));
  }
}

__global__ void GeluBackwardKernel(float* dinp, const float* inp, const float* dout, int64_t n) {
  ACCEL_GRID_STRIDE(i, n) {
    const float x = inp[i];
    const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
    const float th = tanhf(u);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    const float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
    dinp[i] += grad * dout[i];
  }
}

__global__ void ResidualForwardKernel(float* out, const float* a, const float* b, int64_t n) {
  ACCEL_GRID_STRIDE(i, n) { out[i] = a[i] + b[i]; }
}

__global__ void ResidualBackwardKernel(float* da, float* db, const float* dout, int64_t n) {
  ACCEL_GRID_STRIDE(i, n) {
    const float d = dout[i];
    da[i] += d;
    db[i] += d;
  }
}

}  // namespace

absl::Status GeluForward(float* out, const float* inp, int64_t n, cudaStream_t stream) {
  if (absl::Status s = CheckSizes("GeluForward", {n}); !s.ok() || n == 0) return s;
  GeluForwardKernel<<<GridFor(n), kThreads, 0, stream>>>(out, inp, n);
  return ACCEL_CUDA_LAUNCH_STATUS("GeluForwardKernel");
}

absl::Status GeluBackward(float* dinp, const float* inp, const float* dout, int64_t n,
                          cudaStream_t stream) {
  if (absl::Status s = CheckSizes("GeluBackward", {n}); !s.ok() || n == 0) return s;
  GeluBackwardKernel<<<GridFor(n), kThreads, 0, stream>>>(dinp, inp, dout, n);
  return ACCEL_CUDA_LAUNCH_STATUS("GeluBackwardKernel");
}

absl::Status ResidualForward(float* out, const float* a, const float* b, int64_t n,
                             cudaStream_t stream) {
  if (absl::Status s = CheckSizes("ResidualForward", {n}); !s.ok() || n == 0) return s;
  ResidualForwardKernel<<<GridFor(n), kThreads, 0, stream>>>(out, a, b, n);
  return ACCEL_CUDA_LAUNCH_STATUS("ResidualForwardKernel");
}

absl::Status ResidualBackward(float* da, float* db, const float* dout, int64_t n,
                              cudaStream_t stream) {
  if (absl::Status s = CheckSizes("ResidualBackward", {n}); !s.ok() || n == 0) return s;
  ResidualBackwardKernel<<<GridFor(n), kThreads, 0, stream>>>(da, db, dout, n);
  return ACCEL_CUDA_LAUNCH_STATUS("ResidualBackwardKernel");
}

}  // namespace accel::kernels::cuda
