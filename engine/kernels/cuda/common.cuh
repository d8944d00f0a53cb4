// Helpers shared by the .cu kernel files (device code; include only from .cu files):
// launch checks, grid sizing, warp/block reductions, and element conversions that agree bit for
// bit with engine/tensor/dtype.cc (ported from its integer code, not the hardware converts, whose
// NaN handling differs).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/tensor/cuda/device.h"
#include "engine/tensor/dtype.h"

namespace accel::kernels::cuda {

// Reports a failed launch of `kernel` (bad configuration, no device, a sticky earlier error).
inline absl::Status LaunchStatus(const char* kernel, const char* file, int line) {
  return ::accel::cuda::CudaStatus(static_cast<int>(cudaGetLastError()), kernel, file, line);
}
#define ACCEL_CUDA_LAUNCH_STATUS(kernel) LaunchStatus(kernel "<<<>>>", __FILE__, __LINE__)

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (n > 0): enough to fill any current GPU.
inline unsigned GridFor(int64_t n, int threads = kThreads) {
  return static_cast<unsigned>(std::min<int64_t>((n + threads - 1) / threads, 65536));
}

// The body runs for every i in [0, n) over a GridFor(n) launch.
#define ACCEL_GRID_STRIDE(i, n)                                                          \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

inline absl::Status CheckSizes(const char* op, std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes) {
    if (s < 0) return absl::InvalidArgumentError(absl::StrCat(op, ": negative size ", s));
  }
  return absl::OkStatus();
}

// ---- reductions ---------------------------------------------------------------------------------

template <typename T>
__device__ inline T WarpSum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float WarpMax(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

// Sum or max over the block, returned to every thread. blockDim.x must be a multiple of 32 and
// every thread of the block must call it (it synchronises).
template <typename T, bool kMax>
__device__ inline T BlockReduce(T v) {
  __shared__ T warp_vals[32];
  __shared__ T result;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if constexpr (kMax) {
    v = WarpMax(v);
  } else {
    v = WarpSum(v);
  }
  __syncthreads();  // every thread has read the previous call's result
  if (lane == 0) warp_vals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int nwarps = blockDim.x / 32;
    T w = lane < nwarps ? warp_vals[lane] : (kMax ? static_cast<T>(-INFINITY) : T(0));
    if constexpr (kMax) {
      w = WarpMax(w);
    } else {
      w = WarpSum(w);
    }
    if (lane == 0) result = w;
  }
  __syncthreads();
  return result;
}

// ---- element types --------------------------------------------------------------------------------

struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};

__device__ inline float ToFloat(float x) { return x; }
__device__ inline float ToFloat(Bf16 x) {
  return __uint_as_float(static_cast<uint32_t>(x.bits) << 16);
}
__device__ inline float ToFloat(F16 x) {
  const uint32_t sign = static_cast<uint32_t>(x.bits & 0x8000u) << 16;
  const uint32_t exp = (x.bits >> 10) & 0x1fu;
  const uint32_t mant = x.bits & 0x3ffu;
  if (exp == 0x1f) {
    return __uint_as_float(sign | 0x7f800000u | (mant != 0 ? 0x00400000u : 0u) | (mant << 13));
  }
  if (exp == 0) {
    const float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

template <typename T>
__device__ inline T FromFloat(float f);

template <>
__device__ inline float FromFloat<float>(float f) {
  return f;
}
template <>
__device__ inline Bf16 FromFloat<Bf16>(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return Bf16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
  return Bf16{static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
template <>
__device__ inline F16 FromFloat<F16>(float f) {
  const uint32_t u = __float_as_uint(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return F16{static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu))};
  if (abs >= 0x477ff000u) return F16{static_cast<uint16_t>(sign | 0x7c00u)};
  if (abs < 0x38800000u) {
    // __fadd_rn: round to nearest even, never contracted, subnormals kept (as dtype.cc's FPU add).
    const float g = __fadd_rn(__uint_as_float(abs), 0.5f);
    return F16{static_cast<uint16_t>(sign | (__float_as_uint(g) - 0x3f000000u))};
  }
  const uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;
  return F16{static_cast<uint16_t>(sign | (abs >> 13))};
}

// Calls f(T{}) with T the storage type of `dtype` (float, Bf16 or F16).
template <typename F>
absl::Status DispatchDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32: return f(float{});
    case DType::kBF16: return f(Bf16{});
    case DType::kF16: return f(F16{});
  }
  return absl::InvalidArgumentError("unknown dtype");
}

}  // namespace accel::kernels::cuda
