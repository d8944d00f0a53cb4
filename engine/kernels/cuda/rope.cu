// Rotary position embedding on the device (kernels.h; the CPU contract in ../rope.h), in place
// on the q and k heads of packed qkv rows (B, T, (H + 2·KV)·D); v is untouched. Rotate-half
// convention (Hugging Face's rotate_half): for a head vector x and half = D / 2,
//   y[i] = x[i]·cos[t, i] − x[i+half]·sin[t, i],  y[i+half] = x[i+half]·cos[t, i] + x[i]·sin[t, i].
// The backward applies the transpose, which is the inverse rotation (angle −θ), to the gradient.
// One thread per (position, head, i < half) pair: each pair is read and written by that thread
// only, so in place is safe.
#include <cuda_runtime.h>

#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

// sign = +1: forward rotation by θ; sign = −1: by −θ (the backward).
__global__ void RopeKernel(float* qkv, const float* cos, const float* sin, int64_t T,
                           int64_t heads, int64_t width, int64_t half, float sign, int64_t n) {
  ACCEL_GRID_STRIDE(idx, n) {
    const int64_t i = idx % half;
    const int64_t head = (idx / half) % heads;
    const int64_t bt = idx / (half * heads);
    const int64_t t = bt % T;
    float* x = qkv + bt * width + head * 2 * half;
    const float c = cos[t * half + i], s = sign * sin[t * half + i];
    const float x0 = x[i], x1 = x[i + half];
    x[i] = x0 * c - x1 * s;
    x[i + half] = x1 * c + x0 * s;
  }
}

absl::Status Rope(const char* op, float* qkv, const float* cos, const float* sin, int64_t B,
                  int64_t T, int64_t H, int64_t KV, int64_t D, float sign, cudaStream_t stream) {
  if (absl::Status s = CheckSizes(op, {B, T, H, KV, D}); !s.ok()) return s;
  if (D % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": head size D = ", D, " is odd"));
  }
  const int64_t n = B * T * (H + KV) * (D / 2);
  if (n == 0) return absl::OkStatus();
  RopeKernel<<<GridFor(n), kThreads, 0, stream>>>(qkv, cos, sin, T, H + KV, (H + 2 * KV) * D,
                                                  D / 2, sign, n);
  return ACCEL_CUDA_LAUNCH_STATUS("RopeKernel");
}

}  // namespace

absl::Status RopeForward(float* qkv, const float* cos, const float* sin, int64_t B, int64_t T,
                         int64_t H, int64_t KV, int64_t D, cudaStream_t stream) {
  return Rope("RopeForward", qkv, cos, sin, B, T, H, KV, D, 1.0f, stream);
}

absl::Status RopeBackward(float* dqkv, const float* cos, const float* sin, int64_t B, int64_t T,
                          int64_t H, int64_t KV, int64_t D, cudaStream_t stream) {
  return Rope("RopeBackward", dqkv, cos, sin, B, T, H, KV, D, -1.0f, stream);
}

}  // namespace accel::kernels::cuda
