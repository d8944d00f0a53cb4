// SwiGLU on the device (kernels.h; the CPU contract in ../swiglu.h): gate_up (N, 2I) rows
// [gate | up], out (N, I) = silu(gate) · up with silu(g) = g · σ(g). The backward overwrites
// dgate_up: dgate = dout · up · σ(g)(1 + g(1 − σ(g))), dup = dout · silu(g). fp32, one thread
// per output element.
#include <cuda_runtime.h>

#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

__device__ inline float Sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

__global__ void SwiGluForwardKernel(float* out, const float* gate_up, int64_t I, int64_t n) {
  ACCEL_GRID_STRIDE(idx, n) {
    const float* row = gate_up + (idx / I) * 2 * I;
    const int64_t i = idx % I;
    const float g = row[i];
    out[idx] = g * Sigmoid(g) * row[I + i];
  }
}

__global__ void SwiGluBackwardKernel(float* dgate_up, const float* dout, const float* gate_up,
                                     int64_t I, int64_t n) {
  ACCEL_GRID_STRIDE(idx, n) {
    const int64_t offset = (idx / I) * 2 * I, i = idx % I;
    const float g = gate_up[offset + i], u = gate_up[offset + I + i], d = dout[idx];
    const float sig = Sigmoid(g);
    dgate_up[offset + i] = d * u * sig * (1.0f + g * (1.0f - sig));
    dgate_up[offset + I + i] = d * g * sig;
  }
}

}  // namespace

absl::Status SwiGluForward(float* out, const float* gate_up, int64_t N, int64_t I,
                           cudaStream_t stream) {
  if (absl::Status s = CheckSizes("SwiGluForward", {N, I}); !s.ok()) return s;
  const int64_t n = N * I;
  if (n == 0) return absl::OkStatus();
  SwiGluForwardKernel<<<GridFor(n), kThreads, 0, stream>>>(out, gate_up, I, n);
  return ACCEL_CUDA_LAUNCH_STATUS("SwiGluForwardKernel");
}

absl::Status SwiGluBackward(float* dgate_up, const float* dout, const float* gate_up, int64_t N,
                            int64_t I, cudaStream_t stream) {
  if (absl::Status s = CheckSizes("SwiGluBackward", {N, I}); !s.ok()) return s;
  const int64_t n = N * I;
  if (n == 0) return absl::OkStatus();
  SwiGluBackwardKernel<<<GridFor(n), kThreads, 0, stream>>>(dgate_up, dout, gate_up, I, n);
  return ACCEL_CUDA_LAUNCH_STATUS("SwiGluBackwardKernel");
}

}  // namespace accel::kernels::cuda
